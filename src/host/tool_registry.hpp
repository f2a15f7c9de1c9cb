// host/tool_registry.hpp — every loaded extension's tools under two names (SPEC §6.15):
// the runtime name "plugin:tool", and an API-safe name for model APIs, which accept only
// [A-Za-z0-9_-] up to 128 characters ("policy-bundle:echo" → "policy-bundle_echo").
//
// API names are assigned over the whole set, in runtime-name order, so they depend only
// on which tools are loaded: a collision gets "_2", "_3", … with the base shortened to stay
// within 128 characters. Runs on the host's I/O thread only.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/initialize.hpp"

namespace exthost::host {

// What model APIs accept as a tool name.
inline constexpr std::size_t k_max_api_name = 128;
// What model APIs accept as an input property name.
inline constexpr std::size_t k_max_api_property = 64;

struct RegisteredTool {
  std::string plugin_id;
  std::string tool_name;     // what tool.call sends
  std::string runtime_name;  // "plugin:tool"
  std::string api_name;      // API-safe and unique
  std::string description;
  boost::json::value input_schema;      // as the extension declared it
  boost::json::value api_input_schema;  // property names made API-safe (see sanitize_property_name)
  bool idempotent = false;              // declared safe to run again after a crash
};

// A property name as model APIs accept it: [A-Za-z0-9_.-], at most 64 characters.
std::string sanitize_property_name(std::string_view name);

// `api_input` (keyed by API-safe property names, as a model produces it from
// api_input_schema) with the declared names restored, at every depth the schema describes
// (nested objects and array items).
boost::json::value restore_input_names(const boost::json::value& schema, const boost::json::value& api_input);

// Characters outside [A-Za-z0-9_-] become '_'; empty becomes "field"; cut at `max_len`.
std::string sanitize_api_name(std::string_view name, std::size_t max_len = k_max_api_name);

class ToolRegistry {
 public:
  // Adds (or replaces) every tool of `plugin_id`.
  void register_plugin(const std::string& plugin_id, const std::vector<protocol::ToolSpec>& tools);
  void unregister_plugin(const std::string& plugin_id);

  // By runtime name or API name.
  std::optional<RegisteredTool> find(std::string_view name) const;
  // Sorted by runtime name.
  const std::vector<RegisteredTool>& tools() const { return m_tools; }
  std::vector<RegisteredTool> tools_of(const std::string& plugin_id) const;

 private:
  void assign_api_names();
  std::vector<RegisteredTool> m_tools;
};

}  // namespace exthost::host
