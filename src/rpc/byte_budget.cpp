#include "rpc/byte_budget.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

namespace exthost::rpc {

BudgetLease& BudgetLease::operator=(BudgetLease&& o) noexcept {
  if (this != &o) {
    release();
    m_budget = std::move(o.m_budget);
    m_bytes = o.m_bytes;
    o.m_bytes = 0;
  }
  return *this;
}

void BudgetLease::release() {
  if (m_budget) m_budget->release(m_bytes);
  m_budget.reset();
  m_bytes = 0;
}

ByteBudget::ByteBudget(const boost::asio::any_io_executor& ex, std::size_t limit)
    : m_executor(ex), m_limit(limit), m_released(ex) {}

boost::asio::awaitable<std::optional<BudgetLease>> ByteBudget::acquire(std::size_t bytes) {
  bool waited = false;
  for (;;) {
    const std::size_t parked = m_bytes.load(std::memory_order_acquire);
    if (parked == 0 || parked + bytes <= m_limit) break;
    if (!waited) m_waits.fetch_add(1, std::memory_order_relaxed);
    waited = true;
    m_waiting.store(true, std::memory_order_release);
    // Re-check after announcing the wait: a release in between would otherwise be missed.
    const std::size_t again = m_bytes.load(std::memory_order_acquire);
    if (again == 0 || again + bytes <= m_limit) break;
    co_await m_released.wait();
    auto cs = co_await boost::asio::this_coro::cancellation_state;
    if (cs.cancelled() != boost::asio::cancellation_type::none) co_return std::nullopt;
  }
  m_waiting.store(false, std::memory_order_relaxed);
  const std::size_t now = m_bytes.fetch_add(bytes, std::memory_order_acq_rel) + bytes;
  const std::size_t frames = m_frames.fetch_add(1, std::memory_order_relaxed) + 1;
  if (now > m_peak_bytes.load(std::memory_order_relaxed)) m_peak_bytes.store(now, std::memory_order_relaxed);
  if (frames > m_peak_frames.load(std::memory_order_relaxed)) m_peak_frames.store(frames, std::memory_order_relaxed);
  co_return BudgetLease(shared_from_this(), bytes);
}

void ByteBudget::release(std::size_t bytes) {
  m_bytes.fetch_sub(bytes, std::memory_order_acq_rel);
  m_frames.fetch_sub(1, std::memory_order_relaxed);
  if (m_waiting.load(std::memory_order_acquire)) {
    // The waiter's Event lives on the I/O thread: wake it there.
    boost::asio::post(m_executor, [self = shared_from_this()] { self->m_released.notify(); });
  }
}

}  // namespace exthost::rpc
