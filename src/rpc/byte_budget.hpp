// rpc/byte_budget.hpp — the bytes of notification frames one extension may park in the
// host (SPEC A6).
//
// Upstream bounds each subscriber's queue by frame count (8 frames of up to 4 MiB); with
// several subscribers that is still tens of MiB per extension. The budget bounds the sum:
// a frame holds a lease on its body's size from the moment the reader hands it to a
// subscriber until the consumer has dropped it. Past the budget the reader waits, so the
// child's pipe fills and the child blocks on its own write: backpressure, nothing lost.
//
// Threading: acquire() on the I/O thread; a lease may be released on any thread.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "rpc/event.hpp"

namespace exthost::rpc {

// Two maximum-size frames: far above what a healthy stream parks, far below what a
// subscriber that stopped reading could otherwise pin (8 frames × 4 MiB per subscriber).
inline constexpr std::size_t k_parked_bytes_budget = 8u << 20;

class ByteBudget;

// The bytes one parked frame holds; released when destroyed. Move-only.
class BudgetLease {
 public:
  BudgetLease() = default;
  BudgetLease(std::shared_ptr<ByteBudget> budget, std::size_t bytes) : m_budget(std::move(budget)), m_bytes(bytes) {}
  BudgetLease(BudgetLease&& o) noexcept : m_budget(std::move(o.m_budget)), m_bytes(o.m_bytes) { o.m_bytes = 0; }
  BudgetLease& operator=(BudgetLease&& o) noexcept;
  BudgetLease(const BudgetLease&) = delete;
  BudgetLease& operator=(const BudgetLease&) = delete;
  ~BudgetLease() { release(); }
  void release();

 private:
  std::shared_ptr<ByteBudget> m_budget;
  std::size_t m_bytes = 0;
};

class ByteBudget : public std::enable_shared_from_this<ByteBudget> {
 public:
  ByteBudget(const boost::asio::any_io_executor& ex, std::size_t limit);

  // Waits until `bytes` fit beside what is parked, then holds them. A frame always fits
  // when nothing is parked (one frame may be as large as the frame cap). False when the
  // wait was cancelled (the reader is being stopped).
  boost::asio::awaitable<std::optional<BudgetLease>> acquire(std::size_t bytes);

  std::size_t limit() const { return m_limit; }
  std::size_t parked_bytes() const { return m_bytes.load(std::memory_order_relaxed); }
  std::size_t parked_frames() const { return m_frames.load(std::memory_order_relaxed); }
  // High-water marks (SPEC A11).
  std::size_t peak_bytes() const { return m_peak_bytes.load(std::memory_order_relaxed); }
  std::size_t peak_frames() const { return m_peak_frames.load(std::memory_order_relaxed); }
  // How many times the reader had to wait for the budget.
  std::uint64_t waits() const { return m_waits.load(std::memory_order_relaxed); }

 private:
  friend class BudgetLease;
  void release(std::size_t bytes);

  boost::asio::any_io_executor m_executor;
  std::size_t m_limit;
  std::atomic<std::size_t> m_bytes{0};
  std::atomic<std::size_t> m_frames{0};
  std::atomic<std::size_t> m_peak_bytes{0};
  std::atomic<std::size_t> m_peak_frames{0};
  std::atomic<std::uint64_t> m_waits{0};
  std::atomic<bool> m_waiting{false};
  Event m_released;
};

}  // namespace exthost::rpc
