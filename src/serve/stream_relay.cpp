// serve/stream_relay.cpp — a byte-bounded hand-over that never waits on the producer's side.
#include "serve/stream_relay.hpp"

namespace exthost::server {

void StreamRelay::offer(std::string event) {
  std::lock_guard lock(m_mutex);
  if (m_cut) return;
  if (m_bytes >= k_stream_buffer_budget) {
    m_overflowed = true;
    m_cut = true;
    m_ready.notify_all();
    return;
  }
  m_bytes += event.size();
  ++m_kept;
  m_events.push_back(std::move(event));
  m_ready.notify_all();
}

void StreamRelay::close() {
  std::lock_guard lock(m_mutex);
  m_closed = true;
  m_ready.notify_all();
}

void StreamRelay::cut() {
  std::lock_guard lock(m_mutex);
  m_cut = true;
  m_events.clear();
  m_bytes = 0;
  m_ready.notify_all();
}

std::optional<std::string> StreamRelay::take() {
  std::unique_lock lock(m_mutex);
  m_ready.wait(lock, [&] { return !m_events.empty() || m_closed || m_cut; });
  if (m_events.empty()) return std::nullopt;
  std::string event = std::move(m_events.front());
  m_events.pop_front();
  m_bytes -= event.size();
  return event;
}

bool StreamRelay::overflowed() const {
  std::lock_guard lock(m_mutex);
  return m_overflowed;
}

std::uint64_t StreamRelay::kept() const {
  std::lock_guard lock(m_mutex);
  return m_kept;
}

}  // namespace exthost::server
