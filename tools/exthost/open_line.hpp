// open_line.hpp — the line a stream is drawing on, which may be left without its newline
// (a live progress bar, streamed text), shared by whoever draws it (on the host's I/O
// thread) and whoever must end it before the command exits (the signal watcher).
#pragma once

#include <cstdio>
#include <mutex>
#include <string_view>

namespace exthost::cli {

class OpenLine {
 public:
  explicit OpenLine(std::FILE* out) : m_out(out) {}
  OpenLine(const OpenLine&) = delete;
  OpenLine& operator=(const OpenLine&) = delete;

  // Writes `text` and flushes, unless sealed; the line stays open unless `text` ends it.
  void write(std::string_view text) {
    std::lock_guard lock(m_mutex);
    if (m_sealed || text.empty()) return;
    std::fwrite(text.data(), 1, text.size(), m_out);
    std::fflush(m_out);
    m_open = text.back() != '\n';
  }

  // Ends an open line with a newline.
  void end() {
    std::lock_guard lock(m_mutex);
    end_locked();
  }

  // Ends an open line and drops every later write: nothing more is drawn once the command
  // has been interrupted, so its output ends with a whole line.
  void seal() {
    std::lock_guard lock(m_mutex);
    end_locked();
    m_sealed = true;
  }

 private:
  void end_locked() {
    if (!m_open) return;
    std::fputc('\n', m_out);
    std::fflush(m_out);
    m_open = false;
  }

  std::mutex m_mutex;
  std::FILE* m_out;
  bool m_open = false;    // the last byte written was not a newline
  bool m_sealed = false;  // interrupted: write() draws nothing more
};

}  // namespace exthost::cli
