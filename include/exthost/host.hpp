// exthost/host.hpp — the blocking host API: load plugins, call their tools, stop them.
//
// A Host owns one I/O thread on which every extension's pipes, timers and coroutines run;
// the methods below may be called from any thread and block until their work is done.
// Creating a Host ignores SIGPIPE process-wide (a write to a dead child must fail, not
// kill the host). Destroying it stops every extension (the full stop ladder) and joins
// the I/O thread: no child and no descendant in a child's group outlives it.
//
// JSON crosses this API as text, so no JSON library leaks into your build.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exthost/health.hpp"
#include "exthost/result.hpp"

namespace exthost {

struct HostOptions {
  // tool.call's deadline (SPEC A2: 120 s).
  std::chrono::milliseconds tool_call_timeout{120'000};
  // initialize's deadline, at load and at restart (10 s).
  std::chrono::milliseconds initialize_timeout{10'000};
  // command.invoke's deadline (120 s).
  std::chrono::milliseconds command_invoke_timeout{120'000};
  // provider.complete's and provider.stream's deadline (60 s).
  std::chrono::milliseconds provider_timeout{60'000};
  // info.get, settings.editor.* and sidecar.spawn_args (5 s).
  std::chrono::milliseconds quick_timeout{5'000};
  // Any other method's deadline (30 s).
  std::chrono::milliseconds other_timeout{30'000};
  // The stop ladder: the shutdown request's deadline, then the grace after SIGTERM.
  std::chrono::milliseconds shutdown_request_timeout{500};
  std::chrono::milliseconds shutdown_grace{500};
};

struct ToolInfo {
  std::string name;
  std::string description;
  std::string input_schema_json;  // compact JSON text
};

struct ProviderModelInfo {
  std::string id;  // "plugin:provider:model"
  std::string display_name;
  bool tool_use = false;
  bool streaming = false;
  std::optional<std::uint64_t> context_window;
};

struct ProviderInfo {
  std::string id;  // "plugin:provider"
  std::string display_name;
  std::vector<ProviderModelInfo> models;
};

struct CapabilityInfo {
  std::string kind;
  std::string name;
};

struct ExtensionInfo {
  std::string id;  // the plugin directory's name
  Health health = Health::failed;
  std::uint64_t generation = 0;  // of the child that answered initialize
  std::vector<ToolInfo> tools;
  std::vector<ProviderInfo> providers;
  std::vector<CapabilityInfo> capabilities;
  std::optional<std::string> plugin_info_json;  // the info.get answer, when it gave one
  double init_ms = 0;  // spawn to the initialize answer
};

// Exact accounting of a command's output (see docs/protocol.md, "command.invoke").
struct OutputCounters {
  std::uint64_t produced_events = 0, produced_bytes = 0;
  std::uint64_t retained_events = 0, retained_bytes = 0;
  std::uint64_t truncated_events = 0, truncated_bytes = 0;
  std::uint64_t dropped_events = 0, dropped_bytes = 0, dropped_error_events = 0;
  bool saw_done = false;
};

struct CommandOutput {
  std::string result_json;               // the command's answer, verbatim
  std::vector<std::string> events_json;  // retained output and task events, in order
  OutputCounters counters;
  std::optional<std::string> limit_notice;  // set when output was cut or dropped
  bool limit_notice_is_error = false;       // some dropped events were errors
};

// Which tools a provider may run through complete_with_tools(), and how. Both receive the
// tool's name and its input as JSON text. Unset members deny: by default nothing runs.
struct ProviderTools {
  std::function<std::optional<std::string>(const std::string& name, const std::string& input_json)> deny;
  std::function<Result<std::string>(const std::string& name, const std::string& input_json)> run;
};

// Receives one event as JSON text. Runs on the Host's I/O thread: keep it short (a slow
// callback slows that extension, by design, and every other extension with it).
using EventCallback = std::function<void(const std::string& event_json)>;

class Host {
 public:
  explicit Host(HostOptions options = {});
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Reads <plugin_dir>/.synaps-plugin/plugin.json, spawns the extension with the plugin
  // directory as working directory and an allowlisted environment, and handshakes. Any
  // failure after the spawn stops the child before returning.
  Result<ExtensionInfo> load(const std::filesystem::path& plugin_dir);

  // Calls tool `tool` of extension `id` with `input_json` (a JSON text; "{}" when empty).
  // Returns the extension's JSON-RPC result, verbatim, as compact JSON text.
  Result<std::string> call_tool(const std::string& id, const std::string& tool, const std::string& input_json);

  // Runs slash command `command` with `args`; its output is collected under the invocation
  // budget while the command runs.
  Result<CommandOutput> invoke_command(const std::string& id, const std::string& command,
                                       const std::vector<std::string>& args);

  // One model turn through the extension's provider: provider.complete's params and result
  // as JSON text.
  Result<std::string> complete(const std::string& id, const std::string& params_json);
  // A streamed turn: `on_event` gets each provider.stream.event ({"type": "text", …}) in
  // order; the result is the final aggregate.
  Result<std::string> stream(const std::string& id, const std::string& params_json, EventCallback on_event);
  // A turn in which the provider may ask for tools, up to `max_iterations` rounds.
  // `tools_requested`, when given, receives how many tools the provider asked for.
  Result<std::string> complete_with_tools(const std::string& id, const std::string& params_json, ProviderTools tools = {},
                                          std::size_t max_iterations = 8, std::uint32_t* tools_requested = nullptr);

  // info.get, the settings editor and sidecar arguments: results as JSON text.
  Result<std::string> info(const std::string& id);
  Result<std::string> settings_editor_open(const std::string& id, const std::string& category, const std::string& field);
  Result<std::string> settings_editor_key(const std::string& id, const std::string& category, const std::string& field,
                                          const std::string& key);
  Result<std::string> settings_editor_commit(const std::string& id, const std::string& category,
                                             const std::string& field, const std::string& value_json);
  Result<std::string> sidecar_spawn_args(const std::string& id);

  // Every widget.* and settings.editor.* notification of `id`, validated and typed
  // ({"method": "widget.upsert", …}), until the extension is unloaded.
  Result<void> watch_ui_events(const std::string& id, EventCallback on_event);

  // Stops extension `id` (shutdown request, SIGTERM, grace, SIGKILL) and forgets it.
  Result<void> unload(const std::string& id);

  // Stops every extension in parallel.
  void shutdown_all();

  // Non-blocking observation of what is actually serving (nullopt: unknown id, or contended).
  std::optional<Lifecycle> lifecycle(const std::string& id) const;
  // Coarse status for display.
  std::optional<Health> health(const std::string& id) const;
  // The last stderr lines of the extension's child (bounded), for error reports.
  std::string stderr_tail(const std::string& id) const;
  // The pid of the extension's current child, if one runs.
  std::optional<int> child_pid(const std::string& id) const;

  struct Impl;  // opaque: owns the I/O thread and the extensions

 private:
  std::unique_ptr<Impl> m_impl;
};

}  // namespace exthost
