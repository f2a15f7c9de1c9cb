// rpc/lifecycle.hpp — one child's transport lifetime, identified by a generation (SPEC §6.1).
//
// Even generations are live; invalidate() sets the low bit, which is idempotent and never
// cleared, so an invalidated generation differs from the live value and from every later
// one. A reader keeps its own Lifecycle: a late EOF from an old child can only invalidate
// that old child's generation.
//
// Thread-safe: atomics, and a mutex around the child probe that snapshot() only try-locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "exthost/health.hpp"
#include "process/exit_probe.hpp"

namespace exthost::rpc {

class Lifecycle {
 public:
  Lifecycle(std::uint64_t generation, std::shared_ptr<process::ExitProbe> probe)
      : m_generation(generation), m_probe(std::move(probe)) {}

  void invalidate() { m_generation.fetch_or(1, std::memory_order_acq_rel); }
  std::uint64_t generation() const { return m_generation.load(std::memory_order_acquire); }
  bool live() const { return (generation() & 1) == 0; }

  // Set only by a valid initialize answered on this same child.
  void mark_initialized() { m_initialized.store(true, std::memory_order_release); }
  bool initialized() const { return m_initialized.load(std::memory_order_acquire); }

  // Never blocks: probes the child (an exit invalidates), then maps to health. nullopt when
  // the child probe is contended. `recovered`: the extension has been restarted before.
  std::optional<exthost::Lifecycle> snapshot(bool recovered);

  // The lock snapshot() try-locks around the child probe (held by tests to contend it).
  std::mutex& child_mutex() { return m_child_mutex; }

 private:
  std::atomic<std::uint64_t> m_generation;
  std::atomic<bool> m_initialized{false};
  std::mutex m_child_mutex;
  std::shared_ptr<process::ExitProbe> m_probe;  // guarded by m_child_mutex
};

}  // namespace exthost::rpc
