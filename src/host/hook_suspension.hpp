// host/hook_suspension.hpp — when a hook subscription that keeps timing out is left out.
//
// One record per subscription (extension + kind + filter). Only timeouts count: an answer of
// any kind, even one the bus ignores, resets the count. After k_hook_suspend_after_timeouts
// timeouts in a row the subscription is suspended: events pass it by until
// k_hook_suspend_interval has gone, then the first event is a probe (one at a time). A probe
// that is answered resumes the subscription; one that times out suspends it again.
//
// No clock and no I/O of its own: callers pass the time.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

namespace exthost::host {

inline constexpr std::size_t k_hook_suspend_after_timeouts = 3;
inline constexpr std::chrono::seconds k_hook_suspend_interval{30};

class HookSuspension {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  enum class Admission {
    ask,    // not suspended
    probe,  // suspended, the interval has passed: this event goes to it
    skip,   // suspended, or a probe is already out
  };

  // Whether the next event goes to the subscription. A probe admission must be followed by
  // answered(), timed_out() or probe_abandoned().
  Admission admit(time_point now);
  void answered();
  // True when this timeout suspends the subscription: the count is reached, or `probe` (the
  // ask was admitted as the probe) failed.
  bool timed_out(time_point now, bool probe);
  // A probe ended with neither an answer nor a timeout (its caller went away): the next
  // event probes again.
  void probe_abandoned();

  bool suspended() const { return m_until.has_value(); }
  // When the next probe is due; nullopt while not suspended.
  std::optional<time_point> until() const { return m_until; }
  std::size_t consecutive_timeouts() const { return m_timeouts; }

 private:
  std::size_t m_timeouts = 0;
  std::optional<time_point> m_until;
  bool m_probing = false;
};

}  // namespace exthost::host
