// protocol/plugin_info.hpp — what `info.get` and `sidecar.spawn_args` answer (SPEC §2.7,
// §2.9, §5.8).
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::protocol {

struct PluginBuild {
  std::string backend;
  std::vector<std::string> features;
  std::string version;
};
struct PluginCapabilityInfo {
  std::string kind;
  std::string name;
  std::vector<std::string> modes;
};
struct PluginModelInfo {
  std::string id;
  std::optional<std::string> display_name;
  bool installed = false;
};
struct PluginInfo {
  std::optional<PluginBuild> build;
  std::vector<PluginCapabilityInfo> capabilities;
  std::vector<PluginModelInfo> models;
};

// "Invalid info.get response from extension '<id>': …" on a malformed answer.
Result<PluginInfo> parse_plugin_info(std::string_view extension_id, const boost::json::value& v);
boost::json::value to_json(const PluginInfo& info);

struct SidecarSpawnArgs {
  std::vector<std::string> args;
  std::optional<std::string> language;
};
// "Invalid sidecar.spawn_args response from extension '<id>': …"; {} means no args.
Result<SidecarSpawnArgs> parse_sidecar_spawn_args(std::string_view extension_id, const boost::json::value& v);

}  // namespace exthost::protocol
