#include "rpc/inbox.hpp"

#include <algorithm>

#include "util/log.hpp"

#include <boost/asio/this_coro.hpp>

namespace exthost::rpc {

Subscription& Subscription::operator=(Subscription&& o) noexcept {
  if (this != &o) {
    unsubscribe();
    m_inbox = std::move(o.m_inbox);
    m_id = o.m_id;
    m_queue = std::move(o.m_queue);
  }
  return *this;
}

Subscription::~Subscription() {
  if (m_queue) m_queue->abandon();
  unsubscribe();
}

void Subscription::unsubscribe() {
  if (auto inbox = m_inbox.lock()) inbox->unsubscribe(m_id);
  if (m_queue) m_queue->close();
  m_inbox.reset();
}

Inbox::Inbox(boost::asio::any_io_executor ex, std::string extension_id)
    : m_executor(std::move(ex)),
      m_extension_id(std::move(extension_id)),
      m_budget(std::make_shared<ByteBudget>(m_executor, k_parked_bytes_budget)) {}

Result<std::shared_ptr<Lifecycle>> Inbox::install_lifecycle(std::shared_ptr<process::ExitProbe> probe) {
  const std::uint64_t generation = m_next_generation;
  if (generation > UINT64_MAX - 2) return Error::extension("extension lifecycle generation exhausted");
  m_next_generation = generation + 2;
  auto lifecycle = std::make_shared<Lifecycle>(generation, std::move(probe));
  std::lock_guard lock(m_lifecycle_mutex);
  if (m_lifecycle) m_lifecycle->invalidate();
  m_lifecycle = lifecycle;
  return lifecycle;
}

void Inbox::invalidate_lifecycle() {
  std::lock_guard lock(m_lifecycle_mutex);
  if (m_lifecycle) m_lifecycle->invalidate();
}

std::shared_ptr<Lifecycle> Inbox::current_lifecycle() {
  std::lock_guard lock(m_lifecycle_mutex);
  return m_lifecycle;
}

std::optional<exthost::Lifecycle> Inbox::snapshot(bool recovered) {
  std::shared_ptr<Lifecycle> lifecycle;
  {
    std::unique_lock lock(m_lifecycle_mutex, std::try_to_lock);
    if (!lock.owns_lock()) return std::nullopt;
    lifecycle = m_lifecycle;
  }
  if (!lifecycle) return std::nullopt;
  return lifecycle->snapshot(recovered);
}

Result<std::shared_ptr<Inbox::PendingCall>> Inbox::register_pending(std::uint64_t id) {
  if (m_closed) return Error::extension("transport closed: inbox is shut down").because(ErrorCause::not_running);
  auto call = std::make_shared<PendingCall>(m_executor);
  m_pending[id] = call;
  if (m_closed) {  // the reference re-checks after inserting; kept for the same contract
    m_pending.erase(id);
    return Error::extension("transport closed: inbox shut down during registration").because(ErrorCause::not_running);
  }
  return call;
}

void Inbox::complete(std::uint64_t id, Result<boost::json::value> outcome) {
  auto it = m_pending.find(id);
  if (it == m_pending.end()) {
    m_counters.late_replies.fetch_add(1, std::memory_order_relaxed);
    util::log().trace("extension '{}': Response with unknown id {} (no pending request); dropping",
                      m_extension_id, id);
    return;
  }
  auto call = std::move(it->second);
  m_pending.erase(it);
  call->outcome = std::move(outcome);
  call->ready.notify();
}

void Inbox::fail_all_pending(const std::string& reason, ErrorCause cause) {
  invalidate_lifecycle();
  m_closed = true;
  auto drained = std::move(m_pending);
  m_pending.clear();
  for (auto& [id, call] : drained) {
    call->outcome = Error::extension(reason).because(cause);
    call->ready.notify();
  }
}

Subscription Inbox::subscribe() {
  std::erase_if(m_subscribers, [](const auto& s) { return s.second->abandoned(); });
  auto queue = std::make_shared<NotificationQueue>(m_executor);
  const std::uint64_t id = m_next_subscriber++;
  m_subscribers.emplace_back(id, queue);
  return Subscription(weak_from_this(), id, std::move(queue));
}

void Inbox::unsubscribe(std::uint64_t id) {
  std::erase_if(m_subscribers, [id](const auto& s) {
    if (s.first == id) s.second->close();
    return s.first == id || s.second->abandoned();
  });
}

void Inbox::drop_subscribers() {
  for (auto& [id, queue] : m_subscribers) queue->close();
  m_subscribers.clear();
}

boost::asio::awaitable<bool> Inbox::acquire_inbound_slot() {
  while (m_inbound_in_flight >= k_max_inbound_in_flight) {
    co_await m_inbound_slot_freed.wait();
    auto cs = co_await boost::asio::this_coro::cancellation_state;
    if (cs.cancelled() != boost::asio::cancellation_type::none) co_return false;
  }
  ++m_inbound_in_flight;
  auto& peak = m_counters.inbound_in_flight_peak;
  if (m_inbound_in_flight > peak.load(std::memory_order_relaxed)) peak.store(m_inbound_in_flight, std::memory_order_relaxed);
  co_return true;
}

void Inbox::release_inbound_slot() {
  --m_inbound_in_flight;
  m_inbound_slot_freed.notify();
}

boost::asio::awaitable<bool> Inbox::fan_out(NotificationFrame frame, std::size_t bytes) {
  if (m_subscribers.empty()) {
    m_counters.notifications_dropped.fetch_add(1, std::memory_order_relaxed);
    util::log().trace("extension '{}': Notification {} with no active subscribers; dropping", m_extension_id,
                      frame.method);
    co_return true;
  }
  // A snapshot: a subscriber that leaves while we wait on another must not upset the loop.
  auto targets = m_subscribers;
  bool any_dead = false;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    auto& queue = targets[i].second;
    NotificationFrame copy;
    if (i + 1 == targets.size()) {
      copy = std::move(frame);
    } else {
      copy.method = frame.method;
      copy.params = frame.params;
    }
    auto lease = co_await m_budget->acquire(bytes);
    if (!lease) co_return false;  // cancelled: the reader is being stopped
    copy.lease = std::move(*lease);
    const bool pushed = co_await queue->push(std::move(copy));
    if (pushed) {
      m_counters.notifications_delivered.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (queue->abandoned() || queue->closed()) {
      any_dead = true;
      continue;
    }
    co_return false;  // cancelled: the reader is being stopped
  }
  if (any_dead) std::erase_if(m_subscribers, [](const auto& s) { return s.second->abandoned(); });
  co_return true;
}

}  // namespace exthost::rpc
