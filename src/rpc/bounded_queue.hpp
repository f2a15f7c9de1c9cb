// rpc/bounded_queue.hpp — a bounded hand-off between one producer and one consumer.
//
// Promise: holds at most `capacity` items. push() suspends while the queue is full, so a
// consumer that stops draining backpressures the producer (and, for notifications, the
// reader and the child's pipe). close() ends the stream after what is buffered: the consumer
// still drains it, then pop() yields nullopt. When the consumer gives up (abandon()),
// buffered items are dropped and every push fails: the producer learns it is gone.
//
// Not thread-safe: I/O thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/this_coro.hpp>
#include <cstddef>
#include <deque>
#include <optional>

#include "rpc/event.hpp"

namespace exthost::rpc {

template <class T>
class BoundedQueue {
 public:
  BoundedQueue(const boost::asio::any_io_executor& ex, std::size_t capacity)
      : m_capacity(capacity), m_space(ex), m_items(ex) {}

  // Waits for room, then enqueues. False when the consumer is gone, the queue is closed, or
  // the wait was cancelled.
  boost::asio::awaitable<bool> push(T item) {
    while (!m_closed && !m_abandoned && m_items_buffered.size() >= m_capacity) {
      co_await m_space.wait();
      auto cs = co_await boost::asio::this_coro::cancellation_state;
      if (cs.cancelled() != boost::asio::cancellation_type::none) co_return false;
    }
    if (m_closed || m_abandoned) co_return false;
    m_items_buffered.push_back(std::move(item));
    m_items.notify();
    co_return true;
  }

  // Waits for an item; nullopt at the end of the stream or on cancellation.
  boost::asio::awaitable<std::optional<T>> pop() {
    while (m_items_buffered.empty() && !m_closed && !m_abandoned) {
      co_await m_items.wait();
      auto cs = co_await boost::asio::this_coro::cancellation_state;
      if (cs.cancelled() != boost::asio::cancellation_type::none) co_return std::nullopt;
    }
    co_return try_pop();
  }

  // Waits until the stream has ended (closed or abandoned), without taking anything; at once
  // if it has. Returns on cancellation too.
  boost::asio::awaitable<void> wait_ended() {
    while (!m_closed && !m_abandoned) {
      auto cs = co_await boost::asio::this_coro::cancellation_state;
      if (cs.cancelled() != boost::asio::cancellation_type::none) co_return;
      co_await m_items.wait();
    }
  }

  // An item if one is buffered, without waiting.
  std::optional<T> try_pop() {
    if (m_items_buffered.empty()) return std::nullopt;
    T item = std::move(m_items_buffered.front());
    m_items_buffered.pop_front();
    m_space.notify();
    return item;
  }

  // Producer side: no more items will come; buffered ones can still be drained.
  void close() {
    m_closed = true;
    m_items.notify();
    m_space.notify();
  }
  // Consumer side: gone; drop everything and refuse pushes.
  void abandon() {
    m_abandoned = true;
    m_items_buffered.clear();
    m_items.notify();
    m_space.notify();
  }

  bool closed() const { return m_closed; }
  bool abandoned() const { return m_abandoned; }
  std::size_t size() const { return m_items_buffered.size(); }
  std::size_t capacity() const { return m_capacity; }

 private:
  std::size_t m_capacity;
  std::deque<T> m_items_buffered;
  bool m_closed = false;
  bool m_abandoned = false;
  Event m_space;  // notified when an item leaves or the queue ends
  Event m_items;  // notified when an item arrives or the queue ends
};

}  // namespace exthost::rpc
