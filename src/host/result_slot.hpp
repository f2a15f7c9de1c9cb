// host/result_slot.hpp — one result handed from the I/O thread to the one thread waiting
// for it: the blocking Host methods' hand-off.
//
// One state word (empty, set, a waiter sleeps) and a futex on it: the waiter sleeps only
// if the value is not there yet, and the setter makes a system call only when the waiter
// sleeps. Nothing else is allocated or locked. The waiter does not spin: measured, a
// spinning caller held the core that the I/O thread it waits for was woken onto (the
// scheduler places a thread woken by another beside it), so every hand-off got slower.
// Both sides hold the slot by shared_ptr, so the setter may still be waking the waiter
// when the waiter has returned.
//
// A ResultSetter destroyed without having set anything sets what its maker gave for that
// case: a waiter never waits for an operation whose completion was dropped (an I/O context
// destroyed with work queued).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace exthost::host {

template <class R>
class ResultSlot {
 public:
  // The setting side (the I/O thread): once.
  void set(R value) {
    m_value.emplace(std::move(value));
    if (m_state.exchange(k_set, std::memory_order_acq_rel) == k_sleeping) wake();
  }

  // The waiting side: once, after which the slot is empty.
  R take() {
    std::uint32_t expected = k_empty;
    if (m_state.compare_exchange_strong(expected, k_sleeping, std::memory_order_acq_rel)) {
      // A wake-up may be spurious: check again.
      while (m_state.load(std::memory_order_acquire) != k_set) sleep();
    }
    return std::move(*m_value);
  }

 private:
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

  std::uint32_t* word() { return reinterpret_cast<std::uint32_t*>(&m_state); }
  // Returns at once unless the word still says a waiter sleeps.
  void sleep() { ::syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, k_sleeping, nullptr, nullptr, 0); }
  void wake() { ::syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0); }

  static constexpr std::uint32_t k_empty = 0, k_set = 1, k_sleeping = 2;
  std::atomic<std::uint32_t> m_state{k_empty};
  std::optional<R> m_value;
};

// The setting side of a ResultSlot, to move into a completion handler. Destroyed unset, it
// sets what `abandoned()` makes (built only then).
template <class R, class Abandoned>
class ResultSetter {
 public:
  ResultSetter(std::shared_ptr<ResultSlot<R>> slot, Abandoned abandoned)
      : m_slot(std::move(slot)), m_abandoned(std::move(abandoned)) {}
  ResultSetter(ResultSetter&& other) noexcept
      : m_slot(std::move(other.m_slot)), m_abandoned(std::move(other.m_abandoned)) {}
  ResultSetter& operator=(ResultSetter&&) = delete;
  ResultSetter(const ResultSetter&) = delete;
  ResultSetter& operator=(const ResultSetter&) = delete;
  ~ResultSetter() {
    if (m_slot) m_slot->set(m_abandoned());
  }

  void operator()(R value) {
    auto slot = std::move(m_slot);
    if (slot) slot->set(std::move(value));
  }

 private:
  std::shared_ptr<ResultSlot<R>> m_slot;
  Abandoned m_abandoned;
};

}  // namespace exthost::host
