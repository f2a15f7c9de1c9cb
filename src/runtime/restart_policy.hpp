// runtime/restart_policy.hpp — how often and how fast a crashed extension is restarted
// (SPEC §6.4). A plain value: no clock, no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace exthost::runtime {

struct RestartPolicy {
  // Three consecutive failed restarts mark the extension failed: enough to ride out a
  // transient crash, few enough that a crash loop stops within about two seconds.
  std::uint32_t max_attempts = 3;
  std::chrono::milliseconds base_delay{250};
  std::chrono::milliseconds max_delay{5000};
  double multiplier = 2.0;

  // nullopt for attempt 0 or past max_attempts; else min(base × multiplier^(n−1), max).
  std::optional<std::chrono::milliseconds> delay_for_attempt(std::uint32_t attempt) const;
};

}  // namespace exthost::runtime
