// rpc/notification_queue.hpp — the bounded hand-off between a reader and one subscriber.
//
// Promise: holds at most k_notification_queue_capacity frames. push() suspends while the
// queue is full, so a subscriber that stops draining backpressures the reader and, through
// the pipe, the child (SPEC §1.5). close() ends the stream after what is buffered: the
// subscriber still drains it, then pop() yields nullopt. When the subscriber gives up
// (abandon()), buffered frames are dropped and every push fails: the reader prunes it.
//
// Not thread-safe: I/O thread only. One producer (the reader) and one consumer.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>

#include "rpc/event.hpp"

namespace exthost::rpc {

// Eight frames per subscriber (reference): with the 4 MiB frame cap this bounds what one
// subscriber can park in host memory; past it the reader waits instead of buffering.
inline constexpr std::size_t k_notification_queue_capacity = 8;

struct NotificationFrame {
  std::string method;
  boost::json::value params;  // null when the frame had none
};

class NotificationQueue {
 public:
  explicit NotificationQueue(const boost::asio::any_io_executor& ex) : m_space(ex), m_items(ex) {}

  // Waits for room, then enqueues. False when the subscriber is gone, the queue is closed,
  // or the wait was cancelled.
  boost::asio::awaitable<bool> push(NotificationFrame frame);
  // Waits for a frame; nullopt at the end of the stream or on cancellation.
  boost::asio::awaitable<std::optional<NotificationFrame>> pop();
  // A frame if one is buffered, without waiting.
  std::optional<NotificationFrame> try_pop();

  // Producer side: no more frames will come; buffered ones can still be drained.
  void close();
  // Consumer side: the subscriber is gone; drop everything and refuse pushes.
  void abandon();

  bool closed() const { return m_closed; }
  bool abandoned() const { return m_abandoned; }
  std::size_t size() const { return m_frames.size(); }

 private:
  std::deque<NotificationFrame> m_frames;
  bool m_closed = false;
  bool m_abandoned = false;
  Event m_space;  // notified when a frame leaves or the queue ends
  Event m_items;  // notified when a frame arrives or the queue ends
};

}  // namespace exthost::rpc
