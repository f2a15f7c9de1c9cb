// host/limits_policy.hpp — the manifest's `extension.limits` section and the host's ceiling.
//
//   "limits": {"address_space_mib": 512, "open_files": 256, "processes": 32, "cpu_seconds": 600}
//
// Every key is optional; each value is an integer from 1 to k_max_limit_value. Unknown keys
// are refused (a misspelt limit must not silently mean "unlimited").
#pragma once

#include <boost/json/fwd.hpp>
#include <string>

#include "exthost/limits.hpp"
#include "exthost/result.hpp"

namespace exthost::host {

// Reads `ext.limits` (absent or null: no limits asked). Errors read
// "Failed to parse extension manifest: limits.<key>: …".
Result<ResourceLimits> parse_limits_section(const boost::json::object& ext);

// What the extension runs under: each limit the manifest asks for, where it is within the
// host's; the host's where the manifest asks for none. A limit above the host's is refused:
// "Extension '<id>' manifest asks for limits.cpu_seconds = 600, above the host's limit of 60".
Result<ResourceLimits> effective_limits(const std::string& extension_id, const ResourceLimits& host,
                                        const ResourceLimits& asked);

// validate_limits and set_limit (exthost/limits.hpp) are implemented here, beside the keys.

}  // namespace exthost::host
