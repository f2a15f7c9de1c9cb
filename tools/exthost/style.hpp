// style.hpp — colour for the exthost command: only on a terminal, never with NO_COLOR
// (https://no-color.org: set and non-empty) or TERM=dumb.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace exthost::cli {

class Style {
 public:
  // Decides for the stream `out` (stdout or stderr).
  static Style for_stream(std::FILE* out) {
    const char* no_color = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    const bool colour = ::isatty(::fileno(out)) == 1 && (no_color == nullptr || *no_color == '\0') &&
                        !(term != nullptr && std::strcmp(term, "dumb") == 0);
    return Style(colour);
  }
  explicit Style(bool colour) : m_colour(colour) {}
  bool colour() const { return m_colour; }

  std::string red(const std::string& s) const { return wrap("31", s); }
  std::string green(const std::string& s) const { return wrap("32", s); }
  std::string yellow(const std::string& s) const { return wrap("33", s); }
  std::string bold(const std::string& s) const { return wrap("1", s); }
  std::string dim(const std::string& s) const { return wrap("2", s); }

 private:
  std::string wrap(const char* code, const std::string& s) const {
    return m_colour ? "\x1b[" + std::string(code) + "m" + s + "\x1b[0m" : s;
  }
  bool m_colour;
};

}  // namespace exthost::cli
