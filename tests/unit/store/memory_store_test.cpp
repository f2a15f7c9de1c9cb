// The memory store (SPEC §8.13's store tests, on SQLite).
#include "store/memory_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace exthost::store {
namespace {

namespace fs = std::filesystem;

class MemoryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("exthost-memory-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::unique_ptr<MemoryStore> open() {
    auto s = MemoryStore::open(m_dir / "memory" / "memory.db");
    EXPECT_TRUE(s) << s.error().message;
    return std::move(s).value();
  }
  static MemoryRecord record(std::string ns, std::uint64_t ts, std::string content, std::vector<std::string> tags = {}) {
    return MemoryRecord{std::move(ns), ts, std::move(content), std::move(tags), std::nullopt};
  }
  static std::vector<std::string> contents(const MemoryPage& page) {
    std::vector<std::string> out;
    for (const auto& r : page.records) out.push_back(r.content);
    return out;
  }
  fs::path m_dir;
};

TEST_F(MemoryStoreTest, AppendThenQueryReturnsTheRecord) {
  auto s = open();
  MemoryRecord r = record("memory-test-ext", 1767225600000, "hello memory", {"@test"});
  r.meta_json = R"({"k":1})";
  ASSERT_TRUE(s->append(r));
  auto got = s->query(MemoryQuery{"memory-test-ext", {}, {}, {}, {}, {}});
  ASSERT_TRUE(got);
  ASSERT_EQ(got->records.size(), 1u);
  EXPECT_EQ(got->records.at(0).ns, "memory-test-ext");
  EXPECT_EQ(got->records.at(0).timestamp_ms, 1767225600000u);
  EXPECT_EQ(got->records.at(0).content, "hello memory");
  EXPECT_EQ(got->records.at(0).tags, std::vector<std::string>{"@test"});
  EXPECT_EQ(got->records.at(0).meta_json, std::optional<std::string>(R"({"k":1})"));
}

TEST_F(MemoryStoreTest, QueryFiltersByContentContainsIgnoringCase) {
  auto s = open();
  ASSERT_TRUE(s->append(record("ns", 1, "The Quick fox")));
  ASSERT_TRUE(s->append(record("ns", 2, "slow turtle")));
  auto got = s->query(MemoryQuery{"ns", "quick", {}, {}, {}, {}});
  ASSERT_TRUE(got);
  EXPECT_EQ(contents(*got), std::vector<std::string>{"The Quick fox"});
}

TEST_F(MemoryStoreTest, QueryFiltersByTagPrefix) {
  auto s = open();
  ASSERT_TRUE(s->append(record("ns", 1, "a", {"@project/x", "other"})));
  ASSERT_TRUE(s->append(record("ns", 2, "b", {"misc"})));
  auto got = s->query(MemoryQuery{"ns", {}, "@proj", {}, {}, {}});
  ASSERT_TRUE(got);
  EXPECT_EQ(contents(*got), std::vector<std::string>{"a"});
}

TEST_F(MemoryStoreTest, QueryFiltersByAnInclusiveTimeRange) {
  auto s = open();
  for (std::uint64_t ts : {100u, 200u, 300u, 400u}) ASSERT_TRUE(s->append(record("ns", ts, std::to_string(ts))));
  auto got = s->query(MemoryQuery{"ns", {}, {}, 200, 300, {}});
  ASSERT_TRUE(got);
  EXPECT_EQ(contents(*got), (std::vector<std::string>{"300", "200"}));
}

TEST_F(MemoryStoreTest, QueryReturnsMostRecentFirstAndKeepsAppendOrderForEqualTimestamps) {
  auto s = open();
  ASSERT_TRUE(s->append(record("ns", 5, "old")));
  ASSERT_TRUE(s->append(record("ns", 9, "tie-first")));
  ASSERT_TRUE(s->append(record("ns", 9, "tie-second")));
  ASSERT_TRUE(s->append(record("ns", 7, "middle")));
  auto got = s->query(MemoryQuery{"ns", {}, {}, {}, {}, {}});
  ASSERT_TRUE(got);
  EXPECT_EQ(contents(*got), (std::vector<std::string>{"tie-first", "tie-second", "middle", "old"}));
}

TEST_F(MemoryStoreTest, QueryRespectsLimitDefaultsToFiftyAndZeroMeansNone) {
  auto s = open();
  for (std::uint64_t i = 0; i < 60; ++i) ASSERT_TRUE(s->append(record("ns", i, std::to_string(i))));
  EXPECT_EQ(s->query(MemoryQuery{"ns", {}, {}, {}, {}, {}})->records.size(), k_default_query_limit);
  auto three = s->query(MemoryQuery{"ns", {}, {}, {}, {}, 3});
  EXPECT_EQ(contents(*three), (std::vector<std::string>{"59", "58", "57"}));
  EXPECT_TRUE(s->query(MemoryQuery{"ns", {}, {}, {}, {}, 0})->records.empty());
  EXPECT_EQ(s->query(MemoryQuery{"ns", {}, {}, {}, {}, 1000})->records.size(), 60u);
}

TEST_F(MemoryStoreTest, NamespacesAreIsolated) {
  auto s = open();
  ASSERT_TRUE(s->append(record("one", 1, "mine")));
  ASSERT_TRUE(s->append(record("two", 1, "theirs")));
  EXPECT_EQ(contents(*s->query(MemoryQuery{"one", {}, {}, {}, {}, {}})), std::vector<std::string>{"mine"});
}

TEST_F(MemoryStoreTest, AppendRejectsContentOverTheCapAndKeepsContentAtIt) {
  auto s = open();
  auto too_big = s->append(record("ns", 1, std::string(20000, 'x')));
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().message, "content too large: 20000 bytes (max 16384)");
  EXPECT_TRUE(s->append(record("ns", 1, std::string(k_max_content_bytes, 'x'))));
  EXPECT_FALSE(s->append(record("ns", 1, std::string(k_max_content_bytes + 1, 'x'))));
  EXPECT_EQ(s->query(MemoryQuery{"ns", {}, {}, {}, {}, {}})->records.size(), 1u);
}

TEST_F(MemoryStoreTest, AppendRejectsInvalidNamespaces) {
  auto s = open();
  const std::vector<std::string> invalid{"", "a/b", "a\\b", "..", "a..b", "has space", "tab\there", std::string(65, 'n')};
  for (const auto& ns : invalid) {
    auto r = s->append(record(ns, 1, "x"));
    ASSERT_FALSE(r) << ns;
    EXPECT_EQ(r.error().message.rfind("invalid namespace: \"", 0), 0u) << r.error().message;
  }
  EXPECT_EQ(s->append(record("..", 1, "x")).error().message, "invalid namespace: \"..\"");
  EXPECT_TRUE(s->append(record(std::string(64, 'n'), 1, "x")));
}

TEST_F(MemoryStoreTest, ListNamespacesReturnsThoseHoldingRecordsSorted) {
  auto s = open();
  EXPECT_TRUE(s->list_namespaces()->empty());
  ASSERT_TRUE(s->append(record("zeta", 1, "x")));
  ASSERT_TRUE(s->append(record("alpha", 1, "x")));
  ASSERT_TRUE(s->append(record("zeta", 2, "y")));
  EXPECT_EQ(*s->list_namespaces(), (std::vector<std::string>{"alpha", "zeta"}));
}

TEST_F(MemoryStoreTest, QueryOnAnEmptyNamespaceReturnsNothing) {
  auto s = open();
  auto got = s->query(MemoryQuery{"nobody", {}, {}, {}, {}, {}});
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->records.empty());
}

TEST_F(MemoryStoreTest, DatabaseIs0600AndItsFolder0700UnderAPermissiveUmask) {
  const mode_t old = ::umask(0);
  auto s = open();
  ::umask(old);
  ASSERT_TRUE(s->append(record("ns", 1, "x")));
  struct stat st {};
  ASSERT_EQ(::stat((m_dir / "memory" / "memory.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((m_dir / "memory").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(MemoryStoreTest, OpenRefusesASymlinkInPlaceOfTheDatabase) {
  fs::create_directories(m_dir / "memory");
  fs::create_symlink(m_dir / "elsewhere.db", m_dir / "memory" / "memory.db");
  auto s = MemoryStore::open(m_dir / "memory" / "memory.db");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("memory io error"), std::string::npos) << s.error().message;
  EXPECT_FALSE(fs::exists(m_dir / "elsewhere.db"));
}

TEST_F(MemoryStoreTest, OpenRepairsABroaderModeLeftOnTheFile) {
  { auto s = open(); }
  ::chmod((m_dir / "memory" / "memory.db").c_str(), 0644);
  auto s = open();
  struct stat st {};
  ASSERT_EQ(::stat((m_dir / "memory" / "memory.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(MemoryStoreTest, RecordsSurviveReopeningAndTheDatabaseChecksClean) {
  {
    auto s = open();
    ASSERT_TRUE(s->append(record("ns", 1, "durable")));
  }
  auto s = open();
  EXPECT_EQ(contents(*s->query(MemoryQuery{"ns", {}, {}, {}, {}, {}})), std::vector<std::string>{"durable"});
  EXPECT_EQ(*s->integrity_check(), "ok");
}

TEST_F(MemoryStoreTest, ADatabasePathHoldingAFifoIsRefusedByName) {
  const auto path = m_dir / "memory" / "memory.db";
  fs::create_directories(path.parent_path());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto s = MemoryStore::open(path);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "memory io error: " + path.string() + " is not a regular file (a FIFO)");
}

}  // namespace
}  // namespace exthost::store
