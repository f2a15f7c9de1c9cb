#include "process/stderr_log.hpp"

#include <cstring>

#include "util/text.hpp"

namespace exthost::process {

StderrLog::StderrLog(LineSink sink) : m_sink(std::move(sink)) {}

void StderrLog::feed(std::string_view bytes) {
  std::lock_guard lock(m_mutex);
  m_total += bytes.size();
  m_tail.append(bytes.data(), bytes.size());
  if (m_tail.size() > 2 * k_tail_bytes) m_tail.erase(0, m_tail.size() - k_tail_bytes);

  while (!bytes.empty()) {
    const std::size_t room = k_max_line + 1 - m_line.size();
    const std::size_t window = bytes.size() < room ? bytes.size() : room;
    const void* nl = std::memchr(bytes.data(), '\n', window);
    const std::size_t take =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) + 1 : window;
    m_line.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (nl || m_line.size() == k_max_line + 1) emit_line();
  }
}

void StderrLog::finish() {
  std::lock_guard lock(m_mutex);
  if (!m_line.empty()) emit_line();
}

void StderrLog::emit_line() {
  const std::size_t n = m_line.size();
  if (m_forwarded < k_forward_budget) {
    m_forwarded += n;
    const bool truncated = n > k_max_line;
    std::string_view line(m_line.data(), truncated ? k_max_line : n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (m_sink) m_sink(util::utf8_lossy(line), truncated);
  } else {
    m_suppressed += n;
  }
  m_line.clear();
}

StderrLog::Snapshot StderrLog::snapshot() const {
  std::lock_guard lock(m_mutex);
  Snapshot s;
  s.total_bytes = m_total;
  s.forwarded_bytes = m_forwarded;
  s.suppressed_bytes = m_suppressed;
  std::string_view tail = m_tail;
  if (tail.size() > k_tail_bytes) tail.remove_prefix(tail.size() - k_tail_bytes);
  s.tail = util::utf8_lossy(tail);
  return s;
}

}  // namespace exthost::process
