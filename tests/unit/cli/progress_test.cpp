// The exthost command's live task display and colour rules, without a terminal.
#include "../../../tools/exthost/progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace exthost::cli {
namespace {

// Everything a TaskBoard wrote, read back from a temporary file.
std::string shown(bool live, const std::vector<std::string>& events) {
  std::FILE* f = std::tmpfile();
  {
    TaskBoard board(f, live, Style(false));
    for (const auto& e : events) board.show(e);
  }
  std::rewind(f);
  std::string out;
  char buf[256];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  std::fclose(f);
  return out;
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
