// process/stderr_log.hpp — bounded handling of a child's stderr. No I/O.
//
// Promise: whatever a child writes to stderr, the host keeps at most k_tail_bytes of it plus
// one line buffer of k_max_line + 1 bytes, forwards at most k_forward_budget bytes to the log
// (line by line, long lines in chunks), and counts the rest. stderr never affects the
// protocol. Thread-safe: feed() on the pump, snapshots from anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace exthost::process {

class StderrLog {
 public:
  // A log line is a message, not a payload: 8 KiB shows any real stack frame (reference).
  static constexpr std::size_t k_max_line = 8 * 1024;
  // 128 KiB of forwarded stderr per child is plenty to diagnose; a flood is counted only.
  static constexpr std::uint64_t k_forward_budget = 128 * 1024;
  // The tail attached to crash and restart reports: the last error and its context.
  static constexpr std::size_t k_tail_bytes = 4 * 1024;

  // Receives each forwarded line (lossy UTF-8, trailing \r\n trimmed) and whether it was cut.
  using LineSink = std::function<void(std::string_view line, bool truncated)>;

  struct Snapshot {
    std::uint64_t total_bytes = 0;       // every byte read
    std::uint64_t forwarded_bytes = 0;   // bytes of the lines forwarded to the log
    std::uint64_t suppressed_bytes = 0;  // bytes past the forwarding budget
    std::string tail;                    // the last k_tail_bytes bytes, lossy UTF-8
  };

  explicit StderrLog(LineSink sink);

  void feed(std::string_view bytes);
  // End of stream: forwards a pending partial line. Idempotent.
  void finish();
  Snapshot snapshot() const;

 private:
  void emit_line();  // m_line holds one read: up to and including '\n', or k_max_line + 1 bytes

  LineSink m_sink;
  mutable std::mutex m_mutex;  // guards everything below
  std::string m_line;
  std::string m_tail;
  std::uint64_t m_total = 0;
  std::uint64_t m_forwarded = 0;
  std::uint64_t m_suppressed = 0;
};

}  // namespace exthost::process
