#include "runtime/call_scheduler.hpp"

#include <algorithm>
#include <boost/asio/this_coro.hpp>

namespace exthost::runtime {

namespace {
boost::asio::awaitable<bool> was_cancelled() {
  auto state = co_await boost::asio::this_coro::cancellation_state;
  co_return state.cancelled() != boost::asio::cancellation_type::none;
}
}  // namespace

CallScheduler::Slot& CallScheduler::Slot::operator=(Slot&& o) noexcept {
  if (this != &o) {
    release();
    m_owner = o.m_owner;
    m_exclusive = o.m_exclusive;
    m_reached = o.m_reached;
    o.m_owner = nullptr;
  }
  return *this;
}

void CallScheduler::Slot::release() {
  if (m_owner) m_owner->leave(m_exclusive);
  m_owner = nullptr;
}

void CallScheduler::set_limit(std::size_t limit, bool declared) {
  m_bounded = declared;
  m_limit = declared ? std::clamp<std::size_t>(limit, 1, protocol::k_max_concurrency) : 1;
  m_changed.notify();  // a higher limit may admit waiters now
}

bool CallScheduler::may_enter(Lane lane, std::uint64_t ticket) const {
  if (m_exclusive_held || m_exclusive_waiting > 0) return false;
  if (m_bounded && m_in_flight >= m_limit) return false;
  if (lane == Lane::hook) return !m_hook_lane.empty() && m_hook_lane.front() == ticket;
  return m_hook_lane.empty() && !m_normal_lane.empty() && m_normal_lane.front() == ticket;
}

void CallScheduler::forget(Lane lane, std::uint64_t ticket) {
  auto& q = lane == Lane::hook ? m_hook_lane : m_normal_lane;
  if (auto it = std::find(q.begin(), q.end(), ticket); it != q.end()) q.erase(it);
}

boost::asio::awaitable<CallScheduler::Slot> CallScheduler::admit(Lane lane) {
  const std::uint64_t ticket = m_next_ticket++;
  (lane == Lane::hook ? m_hook_lane : m_normal_lane).push_back(ticket);
  // Leaves the lane however this ends, and lets the next one look again.
  struct InLane {
    CallScheduler* s;
    Lane lane;
    std::uint64_t ticket;
    ~InLane() {
      s->forget(lane, ticket);
      s->m_changed.notify();
    }
  } in_lane{this, lane, ticket};
  while (!may_enter(lane, ticket)) {
    co_await m_changed.wait();
    if (co_await was_cancelled()) co_return Slot();
  }
  // The first of ours the child has to work on: nothing of ours was in flight before it.
  const bool reached = m_in_flight == 0 || m_bounded;
  ++m_in_flight;
  co_return Slot(this, false, reached);
}

boost::asio::awaitable<CallScheduler::Slot> CallScheduler::exclusive() {
  ++m_exclusive_waiting;
  struct Waiting {
    CallScheduler* s;
    ~Waiting() {
      --s->m_exclusive_waiting;
      s->m_changed.notify();
    }
  } waiting{this};
  while (m_exclusive_held || m_in_flight > 0) {
    co_await m_changed.wait();
    if (co_await was_cancelled()) co_return Slot();
  }
  m_exclusive_held = true;
  co_return Slot(this, true, true);
}

void CallScheduler::leave(bool exclusive) {
  if (exclusive) {
    m_exclusive_held = false;
  } else if (m_in_flight > 0) {
    --m_in_flight;
  }
  m_changed.notify();
}

}  // namespace exthost::runtime
