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

struct ExtensionInfo {
  std::string id;  // the plugin directory's name
  Health health = Health::failed;
  std::uint64_t generation = 0;  // of the child that answered initialize
  std::vector<ToolInfo> tools;
  double init_ms = 0;  // spawn to the initialize answer
};

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
