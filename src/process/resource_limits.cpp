#include "process/resource_limits.hpp"

namespace exthost {

std::string describe_limits(const ResourceLimits& limits) {
  std::string out;
  auto add = [&](const std::optional<std::uint64_t>& v, const char* name, const char* unit) {
    if (!v) return;
    if (!out.empty()) out += ", ";
    out += std::string(name) + " " + std::to_string(*v) + unit;
  };
  add(limits.address_space_mib, "address space", " MiB");
  add(limits.open_files, "open files", "");
  add(limits.processes, "processes", "");
  add(limits.cpu_seconds, "CPU", " s");
  return out.empty() ? "none" : out;
}

}  // namespace exthost

namespace exthost::process {

std::vector<RlimitSetting> rlimit_settings(const ResourceLimits& limits) {
  std::vector<RlimitSetting> out;
  if (limits.address_space_mib) {
    const rlim_t bytes = static_cast<rlim_t>(*limits.address_space_mib) << 20;
    out.push_back({RLIMIT_AS, bytes, bytes, "address-space limit of " + std::to_string(*limits.address_space_mib) + " MiB"});
  }
  if (limits.open_files) {
    const auto n = static_cast<rlim_t>(*limits.open_files);
    out.push_back({RLIMIT_NOFILE, n, n, "open-files limit of " + std::to_string(*limits.open_files)});
  }
  if (limits.cpu_seconds) {
    const auto s = static_cast<rlim_t>(*limits.cpu_seconds);
    out.push_back({RLIMIT_CPU, s, s + 1, "CPU-time limit of " + std::to_string(*limits.cpu_seconds) + " s"});
  }
  return out;
}

}  // namespace exthost::process
