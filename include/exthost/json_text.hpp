// exthost/json_text.hpp — the host's value types as compact JSON text, in the shapes that
// `exthost serve` and `exthost ... --json` print (docs/serve.md gives each one).
#pragma once

#include <string>

#include "exthost/host.hpp"

namespace exthost {

// {"id", "health", "generation", "restart_count", "tools": [{name, runtime_name, api_name,
//  description, input_schema}], "providers": [...], "hooks": [{kind, tool}],
//  "capabilities": [{kind, name}], "plugin_info": <info.get answer or null>, "init_us"} (spawn to the initialize answer)
std::string to_json_text(const ExtensionInfo& info);
// {name, runtime_name, api_name, description, input_schema, api_input_schema}
std::string to_json_text(const ToolInfo& tool);
// Every counter of ExtensionStats under its own name, "health" as text, "stderr_tail".
std::string to_json_text(const ExtensionStats& stats);
// {"result", "events", "counters": {...}, "notice": <text or null>, "notice_is_error"}
std::string to_json_text(const CommandOutput& output);
// {"loaded": [ids], "failed": [{plugin, manifest_path, reason, hint}]}
std::string to_json_text(const DiscoveryReport& report);
std::string to_json_text(const LoadFailure& failure);

}  // namespace exthost
