// serve/stream_relay.hpp — a streamed call's events, from the host's I/O thread to the
// request's own thread.
//
// The host hands each stream event to a callback on its I/O thread, which must never wait.
// The relay takes the event there without waiting; the request's thread takes it on to the
// output, waiting for room as every request does. What piles up in between is bounded by
// k_stream_buffer_budget bytes: past it the stream is cut (later events are dropped and
// counted, and the request ends with an error) rather than holding the I/O thread or growing.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace exthost::server {

// Bytes of one stream's events that may wait for the output before the stream is cut.
inline constexpr std::size_t k_stream_buffer_budget = 1024 * 1024;

class StreamRelay {
 public:
  // The I/O thread's side; never waits. Keeps `event` while fewer than the budget's bytes
  // wait; otherwise (and once cut) drops it.
  void offer(std::string event);
  // The host's call ended; what was kept is still delivered.
  void close();
  // The request gave up on the stream: every later event is dropped.
  void cut();

  // The request's side: the next kept event, waiting for one; nullopt once the call ended
  // or the stream was cut and every kept event was taken. An event taken is no longer
  // counted, so the budget bounds what waits here while the request holds one more.
  std::optional<std::string> take();
  // Whether the stream was cut because its events outgrew the budget.
  bool overflowed() const;
  // Events kept so far (handed to take()).
  std::uint64_t kept() const;

 private:
  mutable std::mutex m_mutex;
  std::condition_variable m_ready;
  std::deque<std::string> m_events;
  std::size_t m_bytes = 0;
  std::uint64_t m_kept = 0;
  bool m_closed = false;
  bool m_cut = false;
  bool m_overflowed = false;
};

}  // namespace exthost::server
