// protocol/initialize.hpp — the handshake (SPEC §2.1, §5.6.2, A1, A3).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"
#include "protocol/provider.hpp"

namespace exthost::protocol {

// The only protocol version (manifest, initialize params, initialize result).
inline constexpr std::uint32_t k_protocol_version = 1;

struct ToolSpec {
  std::string name;  // as declared (A9: surrounding whitespace is refused, so it is trimmed)
  std::string description;
  boost::json::value input_schema;  // a JSON object
  // exthost's addition: safe to run again after the child failed mid-call (a restarted
  // child gets the same call once more). Absent: false.
  bool idempotent = false;
};

// The most requests an extension may declare it takes at once (capabilities.concurrency).
inline constexpr std::size_t k_max_concurrency = 64;

struct InitializeResult {
  std::uint32_t protocol_version = 0;
  std::vector<ToolSpec> tools;
  std::vector<ProviderSpec> providers;  // validated (SPEC §5.6.3)
  boost::json::array capabilities;  // capability declarations, checked against permissions
  bool cancellation = false;        // capabilities.cancellation: wants $/cancelRequest (A3)
  // capabilities.concurrency: requests the extension takes at once, 1..k_max_concurrency;
  // 1 (the reference's behaviour) when absent.
  std::size_t concurrency = 1;
  // Whether capabilities.concurrency was given: a declared limit (even 1) is kept by the
  // host, requests past it wait there, hooks first; an undeclared one is the reference's
  // pass-through (every request written to the pipe at once, in order).
  bool concurrency_declared = false;
};

// {synaps_version, extension_protocol_version, plugin_id, plugin_root, config, host}.
boost::json::value initialize_params(std::string_view plugin_id, const std::optional<std::string>& plugin_root,
                                     const boost::json::value& config);

// Parses and validates an initialize result with the reference's texts:
// "Invalid initialize response from extension '<id>': …", the protocol version check, then
// the tool specs, then the provider specs.
Result<InitializeResult> parse_initialize_result(std::string_view extension_id, const boost::json::value& v);

}  // namespace exthost::protocol
