// The reference's memory files, <home>/memory/<namespace>.jsonl, imported into the database
// once, at the namespace's first use; hostile files refused or read past.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../../support/file_modes.hpp"
#include "store/memory_import.hpp"
#include "store/memory_store.hpp"

namespace exthost::store {
namespace {

namespace fs = std::filesystem;

// Records as the reference writes them (SPEC §5.13), with the fields records written
// through the extension protocol never hold.
constexpr const char* k_reference_lines =
    R"({"namespace":"notes","timestamp_ms":1767225600000,"content":"hello memory","tags":["@test"],"meta":{"k":1}})"
    "\n"
    R"({"namespace":"notes","timestamp_ms":1767225600000,"content":"same instant, later line","tags":[]})"
    "\n"
    R"({"namespace":"notes","timestamp_ms":1767225500000,"content":"older","id":"mem-0123456789abcdef0123456789abcdef","project":"p0123456789abcdef","provenance":{"source":"chat"},"sensitivity":"normal","retention":"standard"})"
    "\n";

class MemoryImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("exthost-memimport-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir / "memory");
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path db() const { return m_dir / "memory" / "memory.db"; }
  fs::path jsonl(const std::string& ns) const { return m_dir / "memory" / (ns + ".jsonl"); }
  std::unique_ptr<MemoryStore> open() {
    auto s = MemoryStore::open(db());
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  static std::vector<std::string> contents(MemoryStore& s, const std::string& ns) {
    std::vector<std::string> out;
    auto page = s.query(MemoryQuery{ns, {}, {}, {}, {}, 1000});
    EXPECT_TRUE(page) << page.error().message;
    if (page) {
      for (const auto& r : page->records) out.push_back(r.content);
    }
    return out;
  }
  fs::path m_dir;
};

TEST_F(MemoryImportTest, TheReferencesRecordsAreImportedAtFirstUseInOrderWithTheirFields) {
  std::ofstream(jsonl("notes")) << k_reference_lines;
  auto s = open();
  auto page = s->query(MemoryQuery{"notes", {}, {}, {}, {}, {}});
  ASSERT_TRUE(page) << page.error().message;
  ASSERT_EQ(page->records.size(), 3u);
  EXPECT_EQ(page->records[0].content, "hello memory");
  EXPECT_EQ(page->records[0].timestamp_ms, 1767225600000u);
  EXPECT_EQ(page->records[0].tags, std::vector<std::string>{"@test"});
  EXPECT_EQ(page->records[0].meta_json, std::optional<std::string>(R"({"k":1})"));
  EXPECT_EQ(page->records[1].content, "same instant, later line");
  EXPECT_EQ(page->records[2].content, "older");
  EXPECT_FALSE(page->records[2].meta_json);
  EXPECT_TRUE(fs::exists(jsonl("notes"))) << "the reference's file is left as it was";
}

TEST_F(MemoryImportTest, TheImportHappensOnceAcrossUsesStoresAndHosts) {
  std::ofstream(jsonl("notes")) << k_reference_lines;
  {
    auto a = open();
    auto b = open();  // a second host on the same home
    EXPECT_EQ(contents(*a, "notes").size(), 3u);
    EXPECT_EQ(contents(*b, "notes").size(), 3u);
    ASSERT_TRUE(a->append(MemoryRecord{"notes", 1767225700000, "new", {}, std::nullopt}));
    EXPECT_EQ(contents(*a, "notes").size(), 4u);
  }
  auto again = open();
  EXPECT_EQ(contents(*again, "notes"),
            (std::vector<std::string>{"new", "hello memory", "same instant, later line", "older"}));
}

TEST_F(MemoryImportTest, AnAppendFirstStillImportsTheReferencesRecordsBeforeIt) {
  std::ofstream(jsonl("notes")) << k_reference_lines;
  auto s = open();
  ASSERT_TRUE(s->append(MemoryRecord{"notes", 1767225600000, "appended", {}, std::nullopt}));
  EXPECT_EQ(contents(*s, "notes"),
            (std::vector<std::string>{"hello memory", "same instant, later line", "appended", "older"}));
}

TEST_F(MemoryImportTest, BadLinesAreSkippedAndTheRestImported) {
  std::ofstream(jsonl("notes"))
      << "\n"
      << "not json at all\n"
      << R"({"namespace":"other","timestamp_ms":1,"content":"not mine"})" << "\n"
      << R"({"namespace":"notes","timestamp_ms":-1,"content":"negative time"})" << "\n"
      << R"({"namespace":"notes","timestamp_ms":2,"content":7})" << "\n"
      << R"({"namespace":"notes","timestamp_ms":3,"content":"bad tags","tags":[1]})" << "\n"
      << R"({"namespace":"notes","timestamp_ms":4,"content":")" << std::string(k_max_content_bytes + 1, 'c') << "\"}\n"
      << R"([1,2,3])" << "\n"
      << R"({"namespace":"notes","timestamp_ms":5,"content":"good"})" << "\n"
      << std::string(200, '[') << "\n"
      << R"({"namespace":"notes","timestamp_ms":6,"content":"torn tail)";
  auto read = read_reference_records(jsonl("notes"), "notes");
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(*read);
  EXPECT_EQ((*read)->skipped, 9u);
  auto s = open();
  EXPECT_EQ(contents(*s, "notes"), std::vector<std::string>{"good"});
}

TEST_F(MemoryImportTest, MetaAndTagsOverTheCapsAreImportedAndAnsweredCut) {
  std::ofstream(jsonl("notes")) << R"({"namespace":"notes","timestamp_ms":5,"content":"big","meta":")"
                                << std::string(k_max_meta_bytes + 10, 'm') << "\"}\n";
  auto s = open();
  auto page = s->query(MemoryQuery{"notes", {}, {}, {}, {}, {}});
  ASSERT_TRUE(page);
  ASSERT_EQ(page->records.size(), 1u);
  EXPECT_TRUE(page->records[0].truncated);
  EXPECT_FALSE(page->records[0].meta_json);
}

TEST_F(MemoryImportTest, ASymlinkIsNotFollowedAndNothingIsImported) {
  std::ofstream(m_dir / "elsewhere.jsonl") << k_reference_lines;
  fs::create_symlink(m_dir / "elsewhere.jsonl", jsonl("notes"));
  auto read = read_reference_records(jsonl("notes"), "notes");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("is a symbolic link"), std::string::npos) << read.error().message;
  auto s = open();
  EXPECT_TRUE(contents(*s, "notes").empty());
}

TEST_F(MemoryImportTest, AFifoIsRefusedWithoutWaitingOnIt) {
  ASSERT_EQ(::mkfifo(jsonl("notes").c_str(), 0600), 0);
  auto read = read_reference_records(jsonl("notes"), "notes");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("is not a regular file (a FIFO)"), std::string::npos) << read.error().message;
  auto s = open();
  EXPECT_TRUE(contents(*s, "notes").empty());
}

TEST_F(MemoryImportTest, AFileOverTheSizeCapIsRefusedBeforeItIsRead) {
  {
    std::ofstream(jsonl("notes")) << k_reference_lines;
  }
  fs::resize_file(jsonl("notes"), k_max_import_file_bytes + 1);  // sparse: nothing to write
  auto read = read_reference_records(jsonl("notes"), "notes");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("over the cap of " + std::to_string(k_max_import_file_bytes) + " bytes"),
            std::string::npos)
      << read.error().message;
  auto s = open();
  EXPECT_TRUE(contents(*s, "notes").empty());
}

TEST_F(MemoryImportTest, ARefusedFileIsImportedByALaterStoreOnceItIsRepaired) {
  std::ofstream(m_dir / "elsewhere.jsonl") << k_reference_lines;
  fs::create_symlink(m_dir / "elsewhere.jsonl", jsonl("notes"));
  {
    auto s = open();
    EXPECT_TRUE(contents(*s, "notes").empty());
  }
  fs::remove(jsonl("notes"));
  fs::rename(m_dir / "elsewhere.jsonl", jsonl("notes"));
  auto s = open();
  EXPECT_EQ(contents(*s, "notes").size(), 3u);
}

TEST_F(MemoryImportTest, AReadOnlyHomeWithoutADatabaseStillAnswersTheReferencesRecords) {
  std::ofstream(jsonl("notes")) << k_reference_lines;
  ::chmod((m_dir / "memory").c_str(), 0500);
  const bool dropped = exthost::testing::run_without_file_override([&] {
    auto s = open();
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->read_only());
    EXPECT_EQ(contents(*s, "notes").size(), 3u);
    EXPECT_FALSE(s->append(MemoryRecord{"notes", 1, "new", {}, std::nullopt}));
  });
  ::chmod((m_dir / "memory").c_str(), 0700);
  if (!dropped) GTEST_SKIP() << "this thread cannot give up its capabilities";
  EXPECT_FALSE(fs::exists(db()));
}

// A home written by the version before the imports: its database has no memory_imports
// table. Opening it keeps every record and imports the reference's file beside it.
TEST_F(MemoryImportTest, ADatabaseFromBeforeTheImportsKeepsItsRecordsAndImportsTheFileOnce) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "PRAGMA journal_mode=WAL;"
                         "CREATE TABLE memory_records(seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL,"
                         " timestamp_ms INTEGER NOT NULL, content TEXT NOT NULL, tags TEXT NOT NULL, meta TEXT);"
                         "CREATE INDEX memory_records_by_time ON memory_records(namespace, timestamp_ms);"
                         "INSERT INTO memory_records(namespace, timestamp_ms, content, tags, meta)"
                         " VALUES('notes', 1767225650000, 'written before', '[\"@old\"]', '{\"v\":1}');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  std::ofstream(jsonl("notes")) << k_reference_lines;
  for (int run = 0; run < 2; ++run) {
    auto s = open();
    auto page = s->query(MemoryQuery{"notes", {}, {}, {}, {}, {}});
    ASSERT_TRUE(page) << page.error().message;
    ASSERT_EQ(page->records.size(), 4u) << "run " << run;
    EXPECT_EQ(page->records[0].content, "written before");
    EXPECT_EQ(page->records[0].tags, std::vector<std::string>{"@old"});
    EXPECT_EQ(page->records[0].meta_json, std::optional<std::string>(R"({"v":1})"));
    EXPECT_EQ(*s->integrity_check(), "ok");
  }
}

}  // namespace
}  // namespace exthost::store
