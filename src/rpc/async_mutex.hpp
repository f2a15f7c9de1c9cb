// rpc/async_mutex.hpp — a fair mutex for coroutines on one I/O thread.
//
// lock() suspends until the mutex is handed over, in arrival order. Cancellation: a waiter
// cancelled before it is handed the mutex leaves the queue and lock() throws
// operation_aborted; once handed over, the guard owns it even if cancellation follows (the
// guard's destructor passes it on). Not thread-safe: I/O thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <deque>
#include <memory>

#include "rpc/event.hpp"

namespace exthost::rpc {

class AsyncMutex {
 public:
  class Guard {
   public:
    Guard() = default;
    explicit Guard(AsyncMutex* m) : m_mutex(m) {}
    Guard(Guard&& o) noexcept : m_mutex(o.m_mutex) { o.m_mutex = nullptr; }
    Guard& operator=(Guard&& o) noexcept {
      if (this != &o) {
        release();
        m_mutex = o.m_mutex;
        o.m_mutex = nullptr;
      }
      return *this;
    }
    ~Guard() { release(); }
    void release() {
      if (m_mutex) m_mutex->unlock();
      m_mutex = nullptr;
    }
    bool owns() const { return m_mutex != nullptr; }

   private:
    AsyncMutex* m_mutex = nullptr;
  };

  explicit AsyncMutex(boost::asio::any_io_executor ex) : m_executor(std::move(ex)) {}

  boost::asio::awaitable<Guard> lock();
  // Takes the mutex only if it is free.
  Guard try_lock() {
    if (m_locked) return Guard();
    m_locked = true;
    return Guard(this);
  }
  bool locked() const { return m_locked; }

 private:
  struct Waiter {
    explicit Waiter(const boost::asio::any_io_executor& ex) : event(ex) {}
    Event event;
    bool granted = false;
  };
  void unlock();

  boost::asio::any_io_executor m_executor;
  bool m_locked = false;
  std::deque<std::shared_ptr<Waiter>> m_waiters;
};

}  // namespace exthost::rpc
