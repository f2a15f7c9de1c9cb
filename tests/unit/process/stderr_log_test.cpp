#include "process/stderr_log.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace exthost::process {
namespace {

struct Line {
  std::string text;
  bool truncated;
};

TEST(StderrLog, ForwardsLinesTrimmedOfTheirEnding) {
  std::vector<Line> lines;
  StderrLog log([&](std::string_view l, bool t) { lines.push_back({std::string(l), t}); });
  log.feed("one\r\ntw");
  log.feed("o\nthree");
  log.finish();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, "one");
  EXPECT_EQ(lines[1].text, "two");
  EXPECT_EQ(lines[2].text, "three");
  EXPECT_FALSE(lines[2].truncated);
}

TEST(StderrLog, SplitsLinesLongerThanEightKibibytes) {
  std::vector<Line> lines;
  StderrLog log([&](std::string_view l, bool t) { lines.push_back({std::string(l), t}); });
  log.feed(std::string(20000, 'a'));
  log.finish();
  ASSERT_EQ(lines.size(), 3u);  // 8193 + 8193 + 3614 bytes read
  EXPECT_TRUE(lines[0].truncated);
  EXPECT_EQ(lines[0].text.size(), StderrLog::k_max_line);
  EXPECT_FALSE(lines[2].truncated);
  EXPECT_EQ(lines[2].text.size(), 20000u - 2 * (StderrLog::k_max_line + 1));
}

TEST(StderrLog, CountsBytesPastTheForwardingBudgetAndKeepsATail) {
  std::uint64_t forwarded_lines = 0;
  StderrLog log([&](std::string_view, bool) { ++forwarded_lines; });
  const std::string line = std::string(1023, 'x') + "\n";
  for (int i = 0; i < 1000; ++i) log.feed(line);
  log.feed("LAST LINE\n");
  log.finish();
  const auto s = log.snapshot();
  EXPECT_EQ(s.total_bytes, 1000u * 1024 + 10);
  EXPECT_EQ(s.forwarded_bytes, StderrLog::k_forward_budget);
  EXPECT_EQ(s.suppressed_bytes, s.total_bytes - s.forwarded_bytes);
  EXPECT_EQ(forwarded_lines, StderrLog::k_forward_budget / 1024);
  EXPECT_EQ(s.tail.size(), StderrLog::k_tail_bytes);
  EXPECT_EQ(s.tail.substr(s.tail.size() - 10), "LAST LINE\n");
}

TEST(StderrLog, ForwardsInvalidUtf8Lossily) {
  std::vector<Line> lines;
  StderrLog log([&](std::string_view l, bool t) { lines.push_back({std::string(l), t}); });
  log.feed("bad \xff byte\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "bad \xEF\xBF\xBD byte");
}

}  // namespace
}  // namespace exthost::process
