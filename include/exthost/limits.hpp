// exthost/limits.hpp — per-extension resource limits.
//
// A host sets the most any extension may have (HostOptions::limits); a plugin's manifest
// may ask for less in its `extension.limits` section, never more: a manifest that asks
// for more than the host allows is refused at load, before any process starts. An unset
// field is unlimited. The names are the manifest's keys.
//
// Enforcement, per child:
// - address_space_mib: RLIMIT_AS (allocations beyond it fail in the extension);
// - open_files: RLIMIT_NOFILE (opening descriptors beyond it fails with EMFILE);
// - cpu_seconds: RLIMIT_CPU; SIGXCPU at the limit, SIGKILL one second later;
// - processes: the pids controller of a control group made for the extension (counts
//   processes and threads of its whole subtree). Where no pids controller is writable, an
//   extension asking for a processes limit is refused at load: the kernel's per-user
//   RLIMIT_NPROC cannot express a per-extension bound.
// An extension stopped by a limit is reported with the limit, how it ended and its stderr
// tail; the call it was serving is not retried (it would meet the same limit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "exthost/result.hpp"

namespace exthost {

struct ResourceLimits {
  std::optional<std::uint64_t> address_space_mib;
  std::optional<std::uint64_t> open_files;
  std::optional<std::uint64_t> processes;
  std::optional<std::uint64_t> cpu_seconds;

  bool any() const { return address_space_mib || open_files || processes || cpu_seconds; }
  friend bool operator==(const ResourceLimits&, const ResourceLimits&) = default;
};

// The largest value any limit may take (2^40): far above any real bound, and small
// enough that MiB → bytes cannot overflow.
inline constexpr std::uint64_t k_max_limit_value = std::uint64_t{1} << 40;

// "address space 64 MiB, open files 32, processes 8, CPU 2 s" (set fields only), or "none".
std::string describe_limits(const ResourceLimits& limits);

// Sets one limit from "KEY=VALUE" with a manifest key ("cpu_seconds=5"), for command lines
// and configuration files. Errors name the accepted keys and the range.
Result<void> set_limit(ResourceLimits& limits, const std::string& key_equals_value);

// Each set limit is within 1..k_max_limit_value. Error: "limit <key> = <value> is out of range (1 to …)".
Result<void> validate_limits(const ResourceLimits& limits);

}  // namespace exthost
