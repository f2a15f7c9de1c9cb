// The memory store's bounds: capped meta and tags, paged answers, records stored before the
// caps, cursors, and a database that cannot be written.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "../../support/file_modes.hpp"
#include "store/memory_cursor.hpp"
#include "store/memory_record_json.hpp"
#include "store/memory_store.hpp"
#include "wire/frame_parser.hpp"

namespace exthost::store {
namespace {

namespace fs = std::filesystem;

class MemoryBoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("exthost-membounds-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
  }
  void TearDown() override {
    // A folder made read-only by a test is made writable again first.
    std::error_code ec;
    fs::permissions(m_dir / "memory", fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(m_dir, ec);
  }
  fs::path db() const { return m_dir / "memory" / "memory.db"; }
  std::unique_ptr<MemoryStore> open() {
    auto s = MemoryStore::open(db());
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  static MemoryRecord record(std::string ns, std::uint64_t ts, std::string content) {
    return MemoryRecord{std::move(ns), ts, std::move(content), {}, std::nullopt};
  }
  // Every page of `q`, following the cursors (at most `max_pages`).
  static std::vector<MemoryPage> all_pages(MemoryStore& s, MemoryQuery q, int max_pages = 1000) {
    std::vector<MemoryPage> pages;
    for (int i = 0; i < max_pages; ++i) {
      auto page = s.query(q);
      EXPECT_TRUE(page) << page.error().message;
      if (!page) break;
      pages.push_back(*page);
      if (!page->next) break;
      q.after = page->next;
    }
    return pages;
  }
  static std::size_t page_json_bytes(const MemoryPage& page) {
    std::size_t bytes = 2;
    for (const auto& r : page.records) bytes += record_json_bytes(r) + 1;
    return bytes - (page.records.empty() ? 0 : 1);
  }
  // Writes a row as an earlier version could have: no caps on meta and tags.
  void insert_raw(const std::string& ns, std::uint64_t ts, const std::string& content, const std::string& tags_json,
                  const std::string& meta_json) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw,
                                 "INSERT INTO memory_records(namespace, timestamp_ms, content, tags, meta) "
                                 "VALUES(?1, ?2, ?3, ?4, ?5)",
                                 -1, &st, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(st, 1, ns.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, static_cast<sqlite3_int64>(ts));
    sqlite3_bind_text(st, 3, content.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, tags_json.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, meta_json.c_str(), -1, SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(raw);
  }
  fs::path m_dir;
};

TEST_F(MemoryBoundsTest, MetaAndTagsOverTheirCapsAreRefusedAndAtThemKept) {
  auto s = open();
  MemoryRecord r = record("ns", 1, "x");
  r.meta_json = "\"" + std::string(k_max_meta_bytes - 2, 'm') + "\"";
  r.tags.assign(k_max_tags, std::string(k_max_tag_bytes, 't'));
  ASSERT_TRUE(s->append(r));

  MemoryRecord big_meta = r;
  big_meta.meta_json = "\"" + std::string(k_max_meta_bytes - 1, 'm') + "\"";
  auto refused = s->append(big_meta);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "meta too large: 16385 bytes (max 16384)");

  MemoryRecord many_tags = r;
  many_tags.tags.push_back("one-more");
  refused = s->append(many_tags);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "too many tags: 33 (max 32)");

  MemoryRecord long_tag = r;
  long_tag.tags.back() += "t";
  refused = s->append(long_tag);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "tag too large: 257 bytes (max 256)");

  EXPECT_EQ(s->query(MemoryQuery{"ns", {}, {}, {}, {}, {}})->records.size(), 1u);
}

TEST_F(MemoryBoundsTest, ThreeHundredRecordsOfSixteenKibComeBackInPagesUnderTheCapWhoseUnionIsAll) {
  auto s = open();
  for (int i = 0; i < 300; ++i) {
    const std::string head = "rec-" + std::to_string(i) + ".";
    ASSERT_TRUE(s->append(record("ns", 1000 + static_cast<std::uint64_t>(i / 3), head + std::string(16384 - head.size(), 'p'))));
  }
  const auto pages = all_pages(*s, MemoryQuery{"ns", {}, {}, {}, {}, 300});
  ASSERT_GT(pages.size(), 1u) << "300 records of 16 KiB are more than one frame holds";
  std::set<std::string> seen;
  std::vector<std::uint64_t> order;
  for (const auto& page : pages) {
    EXPECT_LE(page_json_bytes(page), k_query_page_bytes);
    EXPECT_LT(page_json_bytes(page) + 1024, wire::k_max_frame_body);
    for (const auto& r : page.records) {
      seen.insert(r.content.substr(0, r.content.find('.')));
      order.push_back(r.timestamp_ms);
    }
  }
  EXPECT_EQ(seen.size(), 300u);
  EXPECT_EQ(order.size(), 300u) << "no record twice";
  EXPECT_TRUE(std::is_sorted(order.rbegin(), order.rend())) << "newest first across pages";
  EXPECT_FALSE(pages.back().next);
}

TEST_F(MemoryBoundsTest, TheLimitCountsEveryPageAndEqualTimestampsKeepAppendOrderAcrossPages) {
  auto s = open();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->append(record("ns", 7, "tie-" + std::to_string(i))));
  MemoryQuery q{"ns", {}, {}, {}, {}, 7};
  q.page_bytes = 1;  // one record a page
  const auto pages = all_pages(*s, q);
  ASSERT_EQ(pages.size(), 7u);
  std::vector<std::string> got;
  for (const auto& p : pages) {
    ASSERT_EQ(p.records.size(), 1u);
    got.push_back(p.records[0].content);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"tie-0", "tie-1", "tie-2", "tie-3", "tie-4", "tie-5", "tie-6"}));
  EXPECT_FALSE(pages.back().next) << "the limit is reached: no cursor";
  EXPECT_EQ(pages[0].next->remaining, 6u);
}

TEST_F(MemoryBoundsTest, RecordsAppendedBetweenPagesDoNotShiftThePagesAfter) {
  auto s = open();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s->append(record("ns", 10 + static_cast<std::uint64_t>(i), std::to_string(i))));
  MemoryQuery q{"ns", {}, {}, {}, {}, {}};
  q.page_bytes = 1;
  auto first = s->query(q);
  ASSERT_TRUE(first && first->next);
  EXPECT_EQ(first->records[0].content, "3");
  ASSERT_TRUE(s->append(record("ns", 99, "newer")));
  q.after = first->next;
  auto second = s->query(q);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->records[0].content, "2");
}

TEST_F(MemoryBoundsTest, RecordsStoredBeforeTheCapsComeBackCutToThemAndMarked) {
  { auto s = open(); }
  const std::string huge_meta = R"({"pad":")" + std::string(3'500'000, 'x') + "\"}";
  std::string many_tags = "[";
  for (int i = 0; i < 40; ++i) many_tags += std::string(i ? "," : "") + "\"t" + std::to_string(i) + "\"";
  many_tags += ",\"" + std::string(300, 'l') + "\"]";
  for (int i = 0; i < 20; ++i) insert_raw("ns", 100 + static_cast<std::uint64_t>(i), "old-" + std::to_string(i), many_tags, huge_meta);
  auto s = open();
  const auto pages = all_pages(*s, MemoryQuery{"ns", {}, {}, {}, {}, {}});
  std::size_t records = 0;
  for (const auto& page : pages) {
    EXPECT_LE(page_json_bytes(page), k_query_page_bytes);
    for (const auto& r : page.records) {
      ++records;
      EXPECT_TRUE(r.truncated);
      EXPECT_FALSE(r.meta_json);
      EXPECT_EQ(r.tags.size(), k_max_tags);
      EXPECT_EQ(r.tags.front(), "t0");
      EXPECT_EQ(record_json(r).at("truncated"), true);
    }
  }
  EXPECT_EQ(records, 20u);
  EXPECT_EQ(pages.size(), 1u) << "cut to the caps, twenty records fit one page";
}

TEST_F(MemoryBoundsTest, CursorsRoundTripAndAnythingElseIsRefused) {
  const MemoryCursor c{1767225600000, 42, 7};
  EXPECT_EQ(encode_cursor(c), "m1.1767225600000.42.7");
  EXPECT_EQ(decode_cursor(encode_cursor(c)), c);
  for (const char* bad : {"", "m1.", "m1.1.2", "m1.1.2.0", "m1.1.2.3.4", "m2.1.2.3", "m1.01.2.3", "m1.-1.2.3",
                          "m1.1.2.3 ", "m1.99999999999999999999.2.3", "m1.9223372036854775808.2.3"}) {
    EXPECT_FALSE(decode_cursor(bad)) << bad;
  }
  EXPECT_TRUE(decode_cursor("m1.9223372036854775807.0.18446744073709551615"));
}

using exthost::testing::run_without_file_override;

TEST_F(MemoryBoundsTest, ADatabaseThatCannotBeWrittenAnswersQueriesAndRefusesAppendsSayingWhy) {
  {
    auto s = open();
    ASSERT_TRUE(s->append(record("ns", 1, "kept")));
  }
  ::chmod(db().c_str(), 0400);
  ::chmod(db().parent_path().c_str(), 0500);
  bool ran = false;
  const bool dropped = run_without_file_override([&] {
    ran = true;
    auto s = MemoryStore::open(db());
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE((*s)->read_only());
    auto got = (*s)->query(MemoryQuery{"ns", {}, {}, {}, {}, {}});
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->records.size(), 1u);
    EXPECT_EQ(got->records[0].content, "kept");
    auto refused = (*s)->append(record("ns", 2, "new"));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message,
              "memory io error: records cannot be written: " + db().string() +
                  " is read-only: Permission denied (os error 13)");
  });
  if (!dropped) GTEST_SKIP() << "this thread cannot give up its capabilities";
  EXPECT_TRUE(ran);
  struct stat st {};
  ASSERT_EQ(::stat(db().parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0500u) << "a folder made read-only stays so";
}

TEST_F(MemoryBoundsTest, AWritableDatabaseInAFolderThatCannotBeWrittenIsOpenedReadOnly) {
  {
    auto s = open();
    ASSERT_TRUE(s->append(record("ns", 1, "kept")));
  }
  ::chmod(db().parent_path().c_str(), 0500);
  const bool dropped = run_without_file_override([&] {
    auto s = MemoryStore::open(db());
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE((*s)->read_only());
    auto got = (*s)->query(MemoryQuery{"ns", {}, {}, {}, {}, {}});
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->records.size(), 1u);
    EXPECT_FALSE((*s)->append(record("ns", 2, "new")));
  });
  if (!dropped) GTEST_SKIP() << "this thread cannot give up its capabilities";
}

TEST_F(MemoryBoundsTest, NoDatabaseAndNoneCanBeMadeAnswersEmptyAndRefusesAppends) {
  fs::create_directories(db().parent_path());
  ::chmod(db().parent_path().c_str(), 0500);
  const bool dropped = run_without_file_override([&] {
    auto s = MemoryStore::open(db());
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE((*s)->read_only());
    auto got = (*s)->query(MemoryQuery{"ns", {}, {}, {}, {}, {}});
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_TRUE(got->records.empty());
    EXPECT_FALSE((*s)->append(record("ns", 2, "new")));
  });
  if (!dropped) GTEST_SKIP() << "this thread cannot give up its capabilities";
  EXPECT_FALSE(fs::exists(db()));
}

}  // namespace
}  // namespace exthost::store
