#include "rpc/notification_queue.hpp"

#include <boost/asio/this_coro.hpp>

namespace exthost::rpc {

boost::asio::awaitable<bool> NotificationQueue::push(NotificationFrame frame) {
  while (!m_closed && !m_abandoned && m_frames.size() >= k_notification_queue_capacity) {
    co_await m_space.wait();
    auto cs = co_await boost::asio::this_coro::cancellation_state;
    if (cs.cancelled() != boost::asio::cancellation_type::none) co_return false;
  }
  if (m_closed || m_abandoned) co_return false;
  m_frames.push_back(std::move(frame));
  m_items.notify();
  co_return true;
}

boost::asio::awaitable<std::optional<NotificationFrame>> NotificationQueue::pop() {
  while (m_frames.empty() && !m_closed && !m_abandoned) {
    co_await m_items.wait();
    auto cs = co_await boost::asio::this_coro::cancellation_state;
    if (cs.cancelled() != boost::asio::cancellation_type::none) co_return std::nullopt;
  }
  co_return try_pop();
}

std::optional<NotificationFrame> NotificationQueue::try_pop() {
  if (m_frames.empty()) return std::nullopt;
  NotificationFrame f = std::move(m_frames.front());
  m_frames.pop_front();
  m_space.notify();
  return f;
}

void NotificationQueue::close() {
  m_closed = true;
  m_items.notify();
  m_space.notify();
}

void NotificationQueue::abandon() {
  m_abandoned = true;
  m_frames.clear();
  m_items.notify();
  m_space.notify();
}

}  // namespace exthost::rpc
