#include "rpc/async_mutex.hpp"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

namespace exthost::rpc {

boost::asio::awaitable<AsyncMutex::Guard> AsyncMutex::lock() {
  if (!m_locked) {
    m_locked = true;
    co_return Guard(this);
  }
  auto waiter = std::make_shared<Waiter>(m_executor);
  m_waiters.push_back(waiter);
  co_await waiter->event.wait();
  if (waiter->granted) co_return Guard(this);
  // Woken without the hand-over: cancelled. Leave the queue.
  m_waiters.erase(std::remove(m_waiters.begin(), m_waiters.end(), waiter), m_waiters.end());
  throw boost::system::system_error(boost::asio::error::operation_aborted);
}

void AsyncMutex::unlock() {
  if (m_waiters.empty()) {
    m_locked = false;
    return;
  }
  auto next = std::move(m_waiters.front());
  m_waiters.pop_front();
  next->granted = true;  // stays locked: ownership moves to the next waiter
  next->event.notify();
}

}  // namespace exthost::rpc
