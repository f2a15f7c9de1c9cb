// host/extension_manager.hpp — every loaded extension of a host, and what they registered
// (SPEC §6.11–§6.15, A8, A9).
//
// Load is validate → resolve config → spawn → initialize → register: nothing is spawned
// for a manifest or configuration that fails, and any failure after the spawn stops the
// child before load returns. Unload removes an extension's hooks, tools and providers
// before stopping it. Discovery loads <home>/plugins/* then <project>/.exthost/plugins/*
// (a project plugin replaces a home plugin of the same name) in name order, once: later
// calls replay the first report until shutdown_all().
//
// Threading: every coroutine runs on the host's I/O thread, as do the registry, bus and
// provider accessors. find(), ids() and stats() may be called from any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exthost/host.hpp"
#include "host/config_resolution.hpp"
#include "host/home.hpp"
#include "host/hook_bus.hpp"
#include "host/inbound_services.hpp"
#include "host/manifest.hpp"
#include "host/provider_registry.hpp"
#include "host/tool_registry.hpp"
#include "rpc/event.hpp"
#include "runtime/process_extension.hpp"
#include "runtime/timeouts.hpp"

namespace exthost::host {

// shutdown_all()'s overall bound: every stop ladder runs in parallel and takes about a
// second; whatever is still running after this is killed outright.
inline constexpr std::chrono::milliseconds k_shutdown_all_bound{10'000};

// How long on_session_end may take in all: the conversation is over, so nobody should
// wait long for observers.
inline constexpr std::chrono::milliseconds k_session_end_budget{5000};

struct ManagerOptions {
  runtime::Timeouts timeouts;
  ResourceLimits limits;  // the most any extension may run under
  RetryMode retry = RetryMode::safe;  // which calls a restarted child gets again
  HomeLayout home;
  EnvLookup env;
  std::optional<std::filesystem::path> project_dir;
  bool auto_approve_confirmations = false;
  bool hooks_fail_closed = false;  // every hook subscription as `"on_error": "block"`
};

class ExtensionManager {
 public:
  // `store_workers` runs blocking store calls for the inbound services.
  ExtensionManager(boost::asio::any_io_executor io, boost::asio::any_io_executor store_workers, ManagerOptions options);

  boost::asio::awaitable<Result<ExtensionInfo>> load(std::filesystem::path plugin_dir);
  // Error: "Extension '<id>' not found".
  boost::asio::awaitable<Result<void>> unload(std::string id);
  // Unload, then load from the same directory; a failed load leaves it unloaded.
  boost::asio::awaitable<Result<ExtensionInfo>> reload(std::string id);
  // Stops every extension, those still loading too: their loads fail, and a discovery
  // under way loads no further plugin.
  boost::asio::awaitable<void> shutdown_all();
  // SIGKILL to every extension now, loaded, still loading or still stopping (unload,
  // shutdown_all).
  void kill_all();
  boost::asio::awaitable<DiscoveryReport> discover(std::function<void(const DiscoveryEvent&)> progress);

  // A tool by runtime name ("plugin:tool") or API name, through before_tool_call and
  // after_tool_call. Errors: "unknown tool '<name>'", "Tool '<plugin:tool>' blocked by hook:
  // <reason> (extension '<id>')" (cause `blocked`, extension_id the hook's extension).
  boost::asio::awaitable<Result<boost::json::value>> call_tool(std::string name, boost::json::value input,
                                                              ToolCallContext context);
  // One hook event through the bus: on_session_end concurrently, every other kind in order.
  boost::asio::awaitable<protocol::HookResult> emit(protocol::HookEvent event);

  // A conversation begins: on_session_start goes to its subscribers; what they inject is
  // kept as that session's injection (SPEC §6.14) and returned.
  boost::asio::awaitable<std::optional<std::string>> session_start(std::string session_id);
  std::optional<std::string> session_injection(const std::string& session_id) const;
  // A conversation ends: on_session_end goes to every subscriber at once within
  // k_session_end_budget (false when it ran out); the session's injection is dropped either way.
  boost::asio::awaitable<bool> session_end(std::string session_id, std::optional<boost::json::value> transcript);

  std::shared_ptr<runtime::ProcessExtension> find(const std::string& id) const;
  std::vector<std::string> ids() const;  // sorted
  // The load-time information refreshed with the current health, generation and restarts.
  std::optional<ExtensionInfo> info(const std::string& id) const;
  std::optional<ExtensionStats> stats(const std::string& id) const;
  std::optional<ConfigDiagnostics> config_diagnostics(const std::string& id) const;
  // The extension's health, `degraded` while one of its hook subscriptions is suspended.
  // Any thread.
  Health health_of(const std::string& id, const runtime::ProcessExtension& ext) const;

  const ToolRegistry& tools() const { return m_tools; }
  const HookBus& hooks() const { return m_hooks; }
  const ProviderRegistry& providers() const { return m_providers; }
  const HomeLayout& home() const { return m_options.home; }

 private:
  struct Loaded {
    Manifest manifest;
    std::shared_ptr<runtime::ProcessExtension> ext;
    ExtensionInfo info;
    // ("plugin:provider", the config keys its config_schema requires), for the config report.
    std::vector<std::pair<std::string, std::vector<std::string>>> provider_required;
  };
  boost::asio::awaitable<Result<ExtensionInfo>> load_manifest(Manifest manifest);
  boost::asio::awaitable<Result<ExtensionInfo>> load_named(Manifest manifest);  // load_manifest's body
  ConfigSources config_sources(const std::string& id) const;
  void forget(const std::string& id);

  boost::asio::any_io_executor m_io;
  boost::asio::any_io_executor m_store_workers;
  ManagerOptions m_options;
  std::shared_ptr<SharedMemoryStore> m_memory;
  HookBus m_hooks;
  ToolRegistry m_tools;
  ProviderRegistry m_providers;
  std::optional<DiscoveryReport> m_discovered;  // the first discovery, replayed
  bool m_discovering = false;                   // a discovery is under way
  rpc::Event m_discovery_done;                  // it ended
  // Expires with the manager: a coroutine frame destroyed later (the Host's I/O context
  // outlives the manager) checks it before touching anything here.
  std::shared_ptr<const bool> m_alive = std::make_shared<const bool>(true);
  // Ids taken by loads under way (the extension once spawned), before their first
  // suspension: a second load of the same id is refused. I/O thread only.
  std::map<std::string, std::shared_ptr<runtime::ProcessExtension>> m_loading;
  std::uint64_t m_shutdowns = 0;  // shutdown_all() calls: a load under way gives up when it changes
  std::map<std::string, std::string> m_session_injections;  // by session id

  mutable std::mutex m_mutex;  // guards m_loaded (read from any thread)
  std::map<std::string, Loaded> m_loaded;
  // Extensions on their way down (unload, shutdown_all), for kill_all(); I/O thread only.
  std::vector<std::weak_ptr<runtime::ProcessExtension>> m_stopping;
};

}  // namespace exthost::host
