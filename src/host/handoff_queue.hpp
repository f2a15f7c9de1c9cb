// host/handoff_queue.hpp — a bounded queue from the I/O thread to one other thread.
//
// The producer is a coroutine on the I/O thread. push() waits asynchronously while the
// queue is full (it never blocks the I/O thread), so a slow consumer holds the producer
// back, and through it the extension. The consumer is one other thread: pop() blocks until
// an item arrives or the producer closes the queue; taking an item from a full queue wakes
// a waiting producer by a post to the I/O thread. Items come out in the order they went in.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "rpc/event.hpp"

namespace exthost::host {

template <class T>
class HandoffQueue : public std::enable_shared_from_this<HandoffQueue<T>> {
 public:
  HandoffQueue(boost::asio::any_io_executor io, std::size_t capacity)
      : m_io(std::move(io)), m_capacity(capacity), m_room(m_io) {}

  // --- producer: the I/O thread ---

  // Waits for room, then enqueues. False when the consumer is gone or the wait was cancelled.
  boost::asio::awaitable<bool> push(T item) {
    co_await wait_room();
    std::lock_guard lock(m_mutex);
    if (m_abandoned || m_closed || m_items.size() >= m_capacity) co_return false;
    m_items.push_back(std::move(item));
    m_ready.notify_one();
    co_return true;
  }

  // Waits until there is room or the consumer is gone; at once if so. Returns on
  // cancellation too.
  boost::asio::awaitable<void> wait_room() {
    for (;;) {
      auto cs = co_await boost::asio::this_coro::cancellation_state;
      if (cs.cancelled() != boost::asio::cancellation_type::none) co_return;
      {
        std::lock_guard lock(m_mutex);
        if (m_abandoned || m_items.size() < m_capacity) co_return;
        m_producer_waiting = true;
      }
      co_await m_room.wait();
    }
  }

  // Enqueues without waiting, even past the capacity: only for producers that cannot wait
  // and whose items are bounded otherwise. False when the consumer is gone.
  bool push_now(T item) {
    std::lock_guard lock(m_mutex);
    if (m_abandoned || m_closed) return false;
    m_items.push_back(std::move(item));
    m_ready.notify_one();
    return true;
  }

  bool full() const {
    std::lock_guard lock(m_mutex);
    return m_items.size() >= m_capacity;
  }

  // No more items: the consumer takes what is queued, then pop() yields nullopt.
  void close() {
    std::lock_guard lock(m_mutex);
    m_closed = true;
    m_ready.notify_all();
  }

  // --- consumer: one other thread ---

  // Blocks until an item is queued or the queue is closed and empty (nullopt).
  std::optional<T> pop() {
    std::unique_lock lock(m_mutex);
    m_ready.wait(lock, [this] { return !m_items.empty() || m_closed || m_abandoned; });
    return take(lock);
  }

  // An item if one is queued, without waiting.
  std::optional<T> try_pop() {
    std::unique_lock lock(m_mutex);
    return take(lock);
  }

  // The consumer is gone: queued items are dropped, pushes fail, a waiting producer resumes.
  void abandon() {
    std::unique_lock lock(m_mutex);
    m_abandoned = true;
    m_items.clear();
    lock.unlock();
    wake_producer();
  }

  std::size_t size() const {
    std::lock_guard lock(m_mutex);
    return m_items.size();
  }
  std::size_t capacity() const { return m_capacity; }

 private:
  std::optional<T> take(std::unique_lock<std::mutex>& lock) {
    if (m_items.empty()) return std::nullopt;
    std::optional<T> item(std::move(m_items.front()));
    m_items.pop_front();
    const bool wake = m_producer_waiting && m_items.size() < m_capacity;
    if (wake) m_producer_waiting = false;
    lock.unlock();
    if (wake) wake_producer();
    return item;
  }

  // The room event belongs to the I/O thread: it is notified there, by a post. The post
  // holds the queue weakly, so a late one never keeps it (and its timer) alive.
  void wake_producer() {
    boost::asio::post(m_io, [weak = this->weak_from_this()] {
      if (auto self = weak.lock()) self->m_room.notify();
    });
  }

  boost::asio::any_io_executor m_io;
  const std::size_t m_capacity;
  mutable std::mutex m_mutex;
  std::condition_variable m_ready;
  std::deque<T> m_items;
  bool m_closed = false;
  bool m_abandoned = false;
  bool m_producer_waiting = false;
  rpc::Event m_room;  // I/O thread only
};

}  // namespace exthost::host
