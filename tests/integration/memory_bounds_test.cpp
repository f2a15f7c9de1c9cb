// The memory store's bounds seen by a real extension: appends over the caps refused by name,
// query answers in pages that never outgrow a frame whatever the records hold, the
// reference's files imported once, and a home whose database cannot be written.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include <boost/json.hpp>
#include <csignal>
#include <fstream>
#include <set>

#include "../support/plugin_dir.hpp"
#include "exthost/host.hpp"
#include "store/memory_store.hpp"
#include "wire/frame_parser.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using exthost::testing::TempRoot;

constexpr const char* k_id = "mem-client";
constexpr const char* k_permissions = R"({"permissions":["tools.register","memory.write","memory.read"]})";

class MemoryBoundsTest : public ::testing::Test {
 protected:
  fs::path home() const { return root.path() / "home"; }
  fs::path db() const { return home() / "memory" / "memory.db"; }
  fs::path plugin() {
    return exthost::testing::write_fake_plugin(root.path(), k_id, {}, k_permissions, EXTHOST_MEMORY_CLIENT);
  }
  exthost::HostOptions options() {
    return exthost::testing::isolated_options(home());  // a tool call is bounded by its 120 s deadline
  }
  // The tool's answer, parsed.
  json::object call(exthost::Host& host, const std::string& tool, const std::string& input) {
    auto r = host.call_tool(k_id, tool, input);
    EXPECT_TRUE(r) << r.error().message;
    return r ? json::parse(*r).as_object() : json::object{};
  }
  // Rows as a store without caps wrote them.
  void insert_raw(int count, const std::string& meta_json) {
    { auto made = exthost::store::MemoryStore::open(db()); ASSERT_TRUE(made); }
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw,
                                 "INSERT INTO memory_records(namespace, timestamp_ms, content, tags, meta) "
                                 "VALUES(?1, ?2, ?3, '[]', ?4)",
                                 -1, &st, nullptr),
              SQLITE_OK);
    for (int i = 0; i < count; ++i) {
      const std::string content = "old-" + std::to_string(i) + ".";
      sqlite3_reset(st);
      sqlite3_bind_text(st, 1, k_id, -1, SQLITE_STATIC);
      sqlite3_bind_int64(st, 2, 1000 + i);
      sqlite3_bind_text(st, 3, content.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 4, meta_json.c_str(), -1, SQLITE_TRANSIENT);
      EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
    }
    sqlite3_finalize(st);
    sqlite3_close(raw);
  }
  TempRoot root{"membounds"};
};

TEST_F(MemoryBoundsTest, AppendsWithMetaOverTheCapAreRefusedNamingTheExtensionAndTheMethod) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin()));
  const auto r = call(host, "append", R"({"count":20,"meta_pad":3500000})");
  EXPECT_EQ(r.at("ok").to_number<int>(), 0);
  ASSERT_EQ(r.at("errors").as_array().size(), 20u);
  EXPECT_EQ(r.at("errors").as_array()[0],
            "memory.append refused for extension 'mem-client': meta too large: 3500010 bytes (max 16384)");
  const auto tags = call(host, "append", R"({"count":1,"tags":["a","b","c","d","e","f","g","h","i","j","k","l","m",)"
                                         R"("n","o","p","q","r","s","t","u","v","w","x","y","z","1","2","3","4","5","6","7"]})");
  EXPECT_EQ(tags.at("errors").as_array()[0], "memory.append refused for extension 'mem-client': too many tags: 33 (max 32)");
  const auto pages = call(host, "pages", "{}");
  EXPECT_EQ(pages.at("records").to_number<int>(), 0);
}

TEST_F(MemoryBoundsTest, RecordsHoldingMegabytesOfMetaComeBackCutAndNoFrameOutgrowsTheCap) {
  insert_raw(20, R"({"pad":")" + std::string(3'500'000, 'x') + "\"}");
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin()));
  const auto r = call(host, "pages", "{}");
  EXPECT_EQ(r.at("error"), "");
  EXPECT_EQ(r.at("records").to_number<int>(), 20);
  EXPECT_EQ(r.at("truncated").to_number<int>(), 20);
  EXPECT_LE(r.at("largest_frame").to_number<std::uint64_t>(), exthost::wire::k_max_frame_body);
}

TEST_F(MemoryBoundsTest, ThreeHundredRecordsOfSixteenKibComeBackInPagesWhoseUnionIsAllOfThem) {
  {
    auto store = exthost::store::MemoryStore::open(db());
    ASSERT_TRUE(store);
    for (int i = 0; i < 300; ++i) {
      const std::string head = "rec-" + std::to_string(i) + ".";
      ASSERT_TRUE((*store)->append(exthost::store::MemoryRecord{
          k_id, 5000 + static_cast<std::uint64_t>(i), head + std::string(16384 - head.size(), 'p'), {}, std::nullopt}));
    }
  }
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin()));
  const auto r = call(host, "pages", R"({"filters":{"limit":300}})");
  EXPECT_EQ(r.at("error"), "");
  EXPECT_EQ(r.at("records").to_number<int>(), 300);
  EXPECT_GE(r.at("pages").to_number<int>(), 2);
  EXPECT_LE(r.at("largest_frame").to_number<std::uint64_t>(), exthost::wire::k_max_frame_body);
  std::set<std::string> heads;
  for (const auto& h : r.at("heads").as_array()) heads.insert(std::string(h.as_string()));
  EXPECT_EQ(heads.size(), 300u);
  EXPECT_TRUE(heads.count("rec-0") && heads.count("rec-299"));
}

TEST_F(MemoryBoundsTest, AnInvalidCursorIsRefusedNamingTheExtension) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin()));
  ASSERT_EQ(call(host, "append", R"({"count":2})").at("ok").to_number<int>(), 2);
  const auto r = call(host, "pages", R"({"filters":{"limit":2,"cursor":"made-up"},"max_pages":1})");
  EXPECT_EQ(r.at("error"),
            "memory.query from extension 'mem-client': invalid 'cursor' parameter (pass back a next_cursor exactly as "
            "it came)");
}

TEST_F(MemoryBoundsTest, TheReferencesRecordsAreImportedOnceForTheExtensionOfTheirNamespace) {
  fs::create_directories(home() / "memory");
  std::ofstream(home() / "memory" / "mem-client.jsonl")
      << R"({"namespace":"mem-client","timestamp_ms":1767225600000,"content":"from the reference.","tags":["@t"],"meta":{"k":1}})"
      << "\n"
      << "a line that is no record\n"
      << R"({"namespace":"mem-client","timestamp_ms":1767225500000,"content":"older."})" << "\n";
  for (int run = 0; run < 2; ++run) {
    exthost::Host host(options());
    ASSERT_TRUE(host.load(plugin()));
    const auto r = call(host, "pages", "{}");
    EXPECT_EQ(r.at("records").to_number<int>(), 2) << "run " << run;
    EXPECT_EQ(r.at("heads"), json::value(json::array{"from the reference", "older"}));
  }
}

struct CliRun {
  int exit_code = -1;
  std::string out;
};

// The command as a process without the capabilities that let root write any file, so that
// file modes hold for it as for any user. exit_code 77: those could not be given up.
CliRun run_cli_without_file_override(const std::vector<std::string>& args) {
  std::vector<std::string> all{EXTHOST_CLI};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  const bool root = ::geteuid() == 0;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    if (root && (::prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0 ||
                 ::prctl(PR_CAPBSET_DROP, CAP_DAC_READ_SEARCH, 0, 0, 0) != 0)) {
      ::_exit(77);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  CliRun r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    r.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST_F(MemoryBoundsTest, AHomeWhoseDatabaseCannotBeWrittenStillAnswersQueriesAndSaysWhyAppendsFail) {
  {
    auto store = exthost::store::MemoryStore::open(db());
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->append(exthost::store::MemoryRecord{k_id, 1, "kept.", {}, std::nullopt}));
  }
  const auto dir = plugin();
  ::chmod(db().c_str(), 0400);
  ::chmod(db().parent_path().c_str(), 0500);
  const auto pages = run_cli_without_file_override({"call", dir.string(), "pages", "{}", "--home", home().string(), "--json"});
  const auto append =
      run_cli_without_file_override({"call", dir.string(), "append", R"({"count":1})", "--home", home().string(), "--json"});
  ::chmod(db().parent_path().c_str(), 0700);
  if (pages.exit_code == 77) GTEST_SKIP() << "this process cannot give up its capabilities";
  ASSERT_EQ(pages.exit_code, 0) << pages.out;
  const auto queried = json::parse(pages.out).at("result");
  EXPECT_EQ(queried.at("error"), "");
  EXPECT_EQ(queried.at("heads"), json::value(json::array{"kept"}));
  ASSERT_EQ(append.exit_code, 0) << append.out;
  const auto appended = json::parse(append.out).at("result");
  EXPECT_EQ(appended.at("ok").to_number<int>(), 0);
  EXPECT_EQ(appended.at("errors"),
            json::value(json::array{"memory io error: records cannot be written: " + db().string() +
                        " is read-only: Permission denied (os error 13)"}));
}

}  // namespace
