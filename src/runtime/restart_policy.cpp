#include "runtime/restart_policy.hpp"

#include <cmath>

namespace exthost::runtime {

std::optional<std::chrono::milliseconds> RestartPolicy::delay_for_attempt(std::uint32_t attempt) const {
  if (attempt == 0 || attempt > max_attempts) return std::nullopt;
  const double ms = static_cast<double>(base_delay.count()) * std::pow(multiplier, static_cast<double>(attempt - 1));
  const double capped = std::min(ms, static_cast<double>(max_delay.count()));
  return std::chrono::milliseconds(static_cast<std::int64_t>(capped));
}

}  // namespace exthost::runtime
