// runtime/call_scheduler.hpp — how many requests one extension's child has at once, and in
// what order the rest wait (capabilities.concurrency, docs/protocol.md).
//
// Two modes, by what the extension declared in its initialize answer:
// - nothing (the default, the reference's behaviour): nothing is held back in the host.
//   Every request is admitted at once and written to the pipe in call order; a sequential
//   child reads and answers them one after another.
// - a limit N (1 to 64): at most N requests are in flight; the others wait in two lanes,
//   hooks first (a hook must not sit behind queued tool calls), each lane first come first
//   served. A waiting request can be cancelled without the child ever seeing it.
// exclusive() waits until nothing is in flight and keeps every admission waiting while it
// is held (the stop ladder's shutdown request; tests that drive a restart by hand).
//
// A waiter cancelled before admission leaves its lane and gets an empty Slot. A Slot frees
// its place when destroyed. Not thread-safe: I/O thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "protocol/initialize.hpp"
#include "rpc/event.hpp"

namespace exthost::runtime {

class CallScheduler {
 public:
  enum class Lane { hook, normal };

  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& o) noexcept : m_owner(o.m_owner), m_exclusive(o.m_exclusive), m_reached(o.m_reached) {
      o.m_owner = nullptr;
    }
    Slot& operator=(Slot&& o) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { release(); }
    void release();
    explicit operator bool() const { return m_owner != nullptr; }
    // Whether the request went to a child that had nothing else of ours to work on first:
    // only such a request's silence says anything about the child.
    bool reached_idle_child() const { return m_reached; }

   private:
    friend class CallScheduler;
    Slot(CallScheduler* owner, bool exclusive, bool reached) : m_owner(owner), m_exclusive(exclusive), m_reached(reached) {}
    CallScheduler* m_owner = nullptr;
    bool m_exclusive = false;
    bool m_reached = false;
  };

  explicit CallScheduler(const boost::asio::any_io_executor& ex) : m_changed(ex) {}

  // 1..protocol::k_max_concurrency (values outside are clamped); takes effect for the next admission.
  // `declared`: the extension gave the limit (held back in the host past it); otherwise
  // the limit is the pass-through default and `limit` is ignored.
  void set_limit(std::size_t limit, bool declared = true);
  bool bounded() const { return m_bounded; }
  std::size_t limit() const { return m_limit; }
  std::size_t in_flight() const { return m_in_flight; }
  std::size_t waiting() const { return m_hook_lane.size() + m_normal_lane.size(); }

  boost::asio::awaitable<Slot> admit(Lane lane);
  boost::asio::awaitable<Slot> exclusive();

 private:
  bool may_enter(Lane lane, std::uint64_t ticket) const;
  void leave(bool exclusive);
  void forget(Lane lane, std::uint64_t ticket);

  rpc::Event m_changed;
  std::size_t m_limit = 1;
  bool m_bounded = false;  // a declared limit: admissions past it wait
  std::size_t m_in_flight = 0;
  bool m_exclusive_held = false;
  std::size_t m_exclusive_waiting = 0;
  std::uint64_t m_next_ticket = 1;
  std::deque<std::uint64_t> m_hook_lane;
  std::deque<std::uint64_t> m_normal_lane;
};

}  // namespace exthost::runtime
