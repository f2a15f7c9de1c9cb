// process/resource_limits.hpp — ResourceLimits as the kernel's rlimits for a child.
#pragma once

#include <string>
#include <sys/resource.h>
#include <vector>

#include "exthost/limits.hpp"

namespace exthost::process {

struct RlimitSetting {
  int resource = 0;  // RLIMIT_*
  rlim_t soft = 0;
  rlim_t hard = 0;
  std::string what;  // "open files limit of 32", for errors
};

// address_space_mib → RLIMIT_AS, open_files → RLIMIT_NOFILE, cpu_seconds → RLIMIT_CPU
// (soft at the limit: SIGXCPU; hard one second later: SIGKILL). `processes` is not an
// rlimit here (see ExtensionCgroup).
std::vector<RlimitSetting> rlimit_settings(const ResourceLimits& limits);

}  // namespace exthost::process
