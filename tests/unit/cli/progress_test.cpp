// The exthost command's live task display and colour rules, without a terminal.
#include "../../../tools/exthost/progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace exthost::cli {
namespace {

// Everything a TaskBoard wrote, read back from a temporary file.
std::string read_back(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[256];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  std::fclose(f);
  return out;
}

std::string shown(bool live, const std::vector<std::string>& events) {
  std::FILE* f = std::tmpfile();
  {
    OpenLine line(f);
    TaskBoard board(line, live, Style(false));
    for (const auto& e : events) board.show(e);
  }
  return read_back(f);
}

const std::vector<std::string> k_events = {
    R"({"method":"task.start","id":"dl","label":"Downloading","kind":"download"})",
    R"({"method":"task.update","id":"dl","current":1,"total":4})",
    R"({"kind":"text","content":"between"})",
    R"({"method":"task.update","id":"dl","current":4,"total":4,"message":"all"})",
    R"({"method":"task.done","id":"dl"})",
};

TEST(TaskBoard, OffATerminalEveryEventIsOnePlainLine) {
  EXPECT_EQ(shown(false, k_events),
            "[task dl] Downloading (download)\n[task dl] 1/4\nbetween\n[task dl] 4/4 all\n[task dl] done\n");
}

TEST(TaskBoard, OnATerminalABarIsRedrawnInPlaceAndOtherOutputEndsItsLine) {
  const std::string bar_quarter = "Downloading [" + std::string(6, '#') + std::string(18, '-') + "] 1/4";
  const std::string bar_full = "Downloading [" + std::string(24, '#') + "] 4/4 all";
  EXPECT_EQ(shown(true, k_events), "\r\x1b[KDownloading \r\x1b[K" + bar_quarter + "\nbetween\n\r\x1b[K" + bar_full +
                                       "\r\x1b[K" + bar_full + " done\n");
}

// What the signal watcher does to a bar being redrawn: the line ends, nothing follows it.
TEST(TaskBoard, ASealedLineEndsTheBarAndDrawsNothingMore) {
  std::FILE* f = std::tmpfile();
  {
    OpenLine line(f);
    TaskBoard board(line, true, Style(false));
    board.show(k_events[0]);
    board.show(k_events[1]);
    line.seal();
    board.show(k_events[3]);
    board.show(k_events[2]);
  }
  const std::string bar_quarter = "Downloading [" + std::string(6, '#') + std::string(18, '-') + "] 1/4";
  EXPECT_EQ(read_back(f), "\r\x1b[KDownloading \r\x1b[K" + bar_quarter + "\n");
}

TEST(OpenLine, EndsOnlyAnUnfinishedLine) {
  std::FILE* f = std::tmpfile();
  {
    OpenLine line(f);
    line.write("whole\n");
    line.end();
    line.write("par");
    line.write("tial");
    line.end();
    line.end();
  }
  EXPECT_EQ(read_back(f), "whole\npartial\n");
}

TEST(Style, ColourNeedsATerminalAndNoNoColor) {
  EXPECT_EQ(Style(true).red("x"), "\x1b[31mx\x1b[0m");
  EXPECT_EQ(Style(false).red("x"), "x");
  std::FILE* f = std::tmpfile();  // not a terminal
  EXPECT_FALSE(Style::for_stream(f).colour());
  std::fclose(f);
  ::setenv("NO_COLOR", "1", 1);
  EXPECT_FALSE(Style::for_stream(stdout).colour());
  ::unsetenv("NO_COLOR");
}

}  // namespace
}  // namespace exthost::cli
