#include "host/extension_manager.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "host/capability.hpp"
#include "host/disabled_plugins.hpp"
#include "host/limits_policy.hpp"
#include "host/tool_hooks.hpp"
#include "protocol/tool_call.hpp"
#include "rpc/event.hpp"
#include "rpc/join_all.hpp"
#include "store/config_store.hpp"
#include "util/exception_text.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace hr = protocol::hook_result;
using namespace asio::experimental::awaitable_operators;

namespace {

// Discovery's hints (SPEC §6.11.3), pointing at exthost's own validator.
constexpr const char* k_hint_manifest_read = "Check manifest file permissions, then run `exthost check <plugin-dir>`";
constexpr const char* k_hint_manifest_json = "Fix JSON syntax, then run `exthost check <plugin-dir>`";
constexpr const char* k_hint_manifest_shape =
    "Check the `extension` block shape against docs/protocol.md, then run `exthost check <plugin-dir>`";
constexpr const char* k_hint_generic = "Run `exthost check <plugin-dir>` and confirm the extension command is installed";

std::string without_controls(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

std::string load_hint(const std::string& reason, const fs::path& plugin_dir, const std::optional<std::string>& setup) {
  if (reason.rfind("Failed to read plugin manifest", 0) == 0) return k_hint_manifest_read;
  if (reason.rfind("Invalid plugin manifest JSON", 0) == 0) return k_hint_manifest_json;
  if (reason.rfind("Failed to parse extension manifest", 0) == 0) return k_hint_manifest_shape;
  const bool missing_binary = reason.find("No such file or directory") != std::string::npos ||
                              reason.find("os error 2") != std::string::npos;
  if (missing_binary && setup) {
    return without_controls(
        "Extension binary missing — this plugin ships source only. Run the setup script from the plugin directory, "
        "then reload. plugin_dir=" +
        plugin_dir.string() + ", setup=" + *setup);
  }
  return k_hint_generic;
}


template <class T>
asio::awaitable<T> call_task(std::function<T()> task) {
  co_return task();
}

// Runs `f` on the worker pool (file reads, directory scans: they may block) and resumes on
// the I/O thread with its result. What `f` throws becomes `fallback(what)`. Not itself a
// coroutine: the closures travel inside a std::function, never as coroutine parameters.
template <class F, class Fallback>
auto on_workers(asio::any_io_executor workers, F f, Fallback fallback) -> asio::awaitable<decltype(f())> {
  using T = decltype(f());
  std::function<T()> task = [f = std::move(f), fallback = std::move(fallback)]() mutable -> T {
    try {
      return f();
    } catch (const std::exception& e) {
      return fallback(std::string(e.what()));
    }
  };
  return asio::co_spawn(workers, call_task<T>(std::move(task)), asio::use_awaitable);
}

asio::awaitable<void> stop(std::shared_ptr<runtime::ProcessExtension> ext) { co_await ext->shutdown(); }

}  // namespace

ExtensionManager::ExtensionManager(asio::any_io_executor io, asio::any_io_executor store_workers,
                                   ManagerOptions options)
    : m_io(std::move(io)),
      m_store_workers(std::move(store_workers)),
      m_options(std::move(options)),
      m_memory(std::make_shared<SharedMemoryStore>(m_options.home.memory_db())),
      // The bus's deadline is the extensions' own hook deadline: its timer, armed first, fires
      // first, so a hook that does not answer is seen by the bus (and suspended after a few).
      m_hooks(m_options.timeouts.hook, std::chrono::steady_clock::now, m_options.hooks_fail_closed),
      m_discovery_done(m_io) {}

ConfigSources ExtensionManager::config_sources(const std::string& id) const {
  ConfigSources s;
  s.env = m_options.env;
  s.plugin_config_file = m_options.home.plugin_config_file(id);
  s.host_config_file = m_options.home.host_config_file();
  if (m_options.project_dir) s.project_root = m_options.project_dir->string();
  return s;
}

asio::awaitable<Result<ExtensionInfo>> ExtensionManager::load(fs::path plugin_dir) {
  // Built before the co_await: no temporary lives across the suspension.
  auto manifest_op = on_workers(
      m_store_workers, [plugin_dir] { return read_manifest(plugin_dir); },
      [plugin_dir](std::string what) -> Result<std::optional<Manifest>> {
        return Error::manifest("Failed to read plugin manifest in " + plugin_dir.string() + ": " + what);
      });
  auto manifest = co_await std::move(manifest_op);
  if (!manifest) co_return std::move(manifest).error();
  if (!manifest->has_value()) {
    co_return Error::manifest("plugin '" + fs::absolute(plugin_dir).lexically_normal().filename().string() +
                              "' declares no extension (no 'extension' block in " + k_manifest_path + ")");
  }
  co_return co_await load_manifest(std::move(**manifest));
}

asio::awaitable<Result<ExtensionInfo>> ExtensionManager::load_manifest(Manifest m) {
  // Every failure from here on is this extension's, whatever path produced it: the error
  // names it (serve's data.extension) even when its text came from a deadline or the OS.
  std::string id = m.id;
  auto loaded = co_await load_named(std::move(m));
  if (!loaded) co_return std::move(loaded).error().from(std::move(id));
  co_return loaded;
}

asio::awaitable<Result<ExtensionInfo>> ExtensionManager::load_named(Manifest m) {
  const std::string id = m.id;
  const std::string ext_name = "Extension '" + id + "'";
  // The id is taken before the first suspension: a second load of it meanwhile is refused
  // instead of running a second process under the same id.
  if (find(id) || m_loading.count(id) != 0) co_return Error::usage(ext_name + " is already loaded");
  m_loading.emplace(id, nullptr);
  // Its destructor also runs when the Host is destroyed with this load suspended, after the
  // manager is gone: it then touches nothing.
  struct Reservation {
    ExtensionManager& manager;
    std::weak_ptr<const bool> alive;
    std::string id;
    ~Reservation() {
      if (alive.lock()) manager.m_loading.erase(id);
    }
  } reservation{*this, m_alive, id};
  const std::uint64_t shutdowns = m_shutdowns;
  // Configuration first: a missing value must not cost a process (SPEC §6.11.1 step 1).
  // Resolving reads the config files: off the I/O thread.
  // Built before the co_await: no temporary lives across the suspension.
  auto config_op = on_workers(
      m_store_workers, [id, entries = m.config, sources = config_sources(id)] { return resolve_config(id, entries, sources); },
      [ext_name](std::string what) -> Result<boost::json::object> {
        return Error::internal(ext_name + " configuration could not be resolved: " + what);
      });
  auto config = co_await std::move(config_op);
  if (!config) co_return std::move(config).error();
  if (m_shutdowns != shutdowns) co_return Error::usage(ext_name + " was stopped while loading: the host is shutting down");
  if (auto valid = validate_limits(m_options.limits); !valid) co_return std::move(valid).error();
  auto limits = effective_limits(id, m_options.limits, m.limits);
  if (!limits) co_return std::move(limits).error();

  runtime::ProcessSpec spec;
  spec.id = id;
  spec.command = resolve_command(m);
  spec.args = resolve_args(m);
  spec.cwd = m.plugin_dir;
  spec.limits = limits.value();
  spec.retry = m_options.retry;
  const ResourceLimits spec_limits = spec.limits;
  const auto started = std::chrono::steady_clock::now();
  auto spawned = co_await runtime::ProcessExtension::spawn(m_io, std::move(spec), m_options.timeouts);
  if (!spawned) co_return std::move(spawned).error();
  auto ext = std::move(spawned).value();
  m_loading[id] = ext;  // reachable by shutdown_all() and kill_all() while it loads
  // Permissions before initialize: an extension may use the stores while it initializes.
  ext->set_inbound_handler(std::make_shared<InboundServices>(id, m.granted, m_memory,
                                                             m_options.home.plugin_config_file(id), m_store_workers));
  // The resolved keys, kept to check the providers' requirements once they are known.
  std::vector<std::string> resolved_keys;
  for (const auto& [key, value] : config.value()) resolved_keys.emplace_back(key);
  auto init = co_await ext->initialize(m.plugin_dir, boost::json::value(std::move(config).value()));
  const auto answered = std::chrono::steady_clock::now();

  // Every refusal from here on stops the child before load returns (A9).
  std::optional<Error> refused;
  if (m_shutdowns != shutdowns) {  // re-read after the handshake's suspension
    refused = Error::usage(ext_name + " was stopped while loading: the host is shutting down");
  } else if (!init) {
    refused = init.error();
    // The handshake's own failure ("transport closed: EOF") names neither side.
    if (refused->message.find("'" + id + "'") == std::string::npos) {
      refused->message = ext_name + " initialize failed: " + refused->message;
    }
    if (spec_limits.any()) {
      if (auto ended = ext->exit_description(); !ended.empty()) refused->message += "; extension '" + id + "' " + ended;
    }
    const std::string tail = ext->stderr_tail();
    if (!tail.empty()) refused->message += "\nstderr tail of extension '" + id + "':\n" + tail;
  } else if (!init->tools.empty() && !m.granted.has(Permission::tools_register)) {
    refused = Error::extension(ext_name + " registered tools but lacks permission 'tools.register'");
  } else if (!init->providers.empty() && !m.granted.has(Permission::providers_register)) {
    refused = Error::extension(ext_name + " registered providers but lacks permission 'providers.register'");
  }
  std::vector<CapabilityDeclaration> capabilities;
  if (!refused) {
    auto parsed = parse_capabilities(init->capabilities);
    if (!parsed) {
      refused = Error::extension("Invalid initialize response from extension '" + id + "': " + parsed.error().message);
    } else {
      capabilities = std::move(parsed).value();
      for (const auto& cap : capabilities) {
        if (auto valid = validate_capability(cap, m.granted); !valid) {
          refused = Error::extension(ext_name + " capability '" + cap.kind + "' invalid: " + valid.error().message);
          break;
        }
      }
    }
  }
  // Providers: what their config_schema requires must have been resolved (SPEC §5.4).
  std::vector<std::pair<std::string, std::vector<std::string>>> provider_required;
  if (!refused) {
    for (const auto& p : init->providers) {
      if (refused || !p.config_schema || !p.config_schema->is_object()) continue;
      const auto* required = p.config_schema->get_object().if_contains("required");
      if (required == nullptr || !required->is_array()) continue;
      for (const auto& key : required->get_array()) {
        if (!key.is_string()) {
          refused = Error::manifest(ext_name + " provider '" + p.id + "' config_schema.required must contain only strings");
          break;
        }
        const std::string k(key.get_string());
        if (std::find(resolved_keys.begin(), resolved_keys.end(), k) == resolved_keys.end()) {
          refused = Error::manifest(ext_name + " provider '" + p.id + "' missing required provider config '" + k + "'");
          break;
        }
        if (provider_required.empty() || provider_required.back().first != id + ":" + p.id) {
          provider_required.emplace_back(id + ":" + p.id, std::vector<std::string>{});
        }
        provider_required.back().second.push_back(k);
      }
    }
  }
  if (!refused) {
    for (const auto& p : init->providers) {
      if (auto registered = m_providers.register_provider(id, p); !registered) {
        refused = std::move(registered).error();
        break;
      }
      for (const auto& model : p.models) {
        const auto* caps = model.capabilities.if_object();
        const auto* tool_use = caps ? caps->if_contains("tool_use") : nullptr;
        if (tool_use != nullptr && tool_use->is_bool() && tool_use->get_bool()) {
          util::log().info("Provider '{}:{}' is tool-use capable: it can request host tools through provider "
                           "mediation.",
                           id, p.id);
          break;
        }
      }
    }
  }
  if (!refused) {
    for (const auto& sub : m.hooks) {
      if (auto subscribed = m_hooks.subscribe(ext, sub, m.granted); !subscribed) {
        refused = std::move(subscribed).error();
        break;
      }
    }
  }
  if (!refused && m_shutdowns != shutdowns) {
    refused = Error::usage(ext_name + " was stopped while loading: the host is shutting down");
  }
  if (refused) {
    m_providers.unregister_plugin(id);
    m_hooks.unsubscribe_all(id);
    co_await ext->shutdown();
    co_return std::move(*refused);
  }
  m_tools.register_plugin(id, init->tools);

  ExtensionInfo info;
  info.id = id;
  info.plugin_dir = m.plugin_dir;
  info.init_ms = std::chrono::duration<double, std::milli>(answered - started).count();
  info.limits = spec_limits;
  info.contained_by_cgroup = ext->child() && ext->child()->contained_by_cgroup();
  info.concurrency = init->concurrency;
  info.cancellation = init->cancellation;
  for (const auto& cap : capabilities) info.capabilities.push_back(CapabilityInfo{cap.kind, cap.name});
  // The optional info.get probe: best effort, never fails the load (SPEC §2.7).
  if (!init->tools.empty() || !init->providers.empty() || !capabilities.empty()) {
    auto probed = co_await ext->get_info();
    if (probed) {
      info.plugin_info_json = wire::to_json(protocol::to_json(probed.value()));
    } else if (probed.error().cause == ErrorCause::application && probed.error().code == -32601) {
      util::log().debug("extension '{}': no info.get: {}", id, probed.error().message);
    } else {
      util::log().warn("extension '{}': info.get failed: {}", id, probed.error().message);
    }
  }
  if (m_shutdowns != shutdowns || ext->stopped()) {  // re-read after the probe's suspension
    forget(id);
    co_await ext->shutdown();
    co_return Error::usage(ext_name + " was stopped while loading: the host is shutting down");
  }
  {
    std::lock_guard lock(m_mutex);
    m_loaded[id] = Loaded{std::move(m), ext, info, std::move(provider_required)};
  }
  util::log().debug("extension '{}': loaded", id);
  co_return *this->info(id);
}

void ExtensionManager::forget(const std::string& id) {
  m_hooks.unsubscribe_all(id);
  m_tools.unregister_plugin(id);
  m_providers.unregister_plugin(id);
}

asio::awaitable<Result<void>> ExtensionManager::unload(std::string id) {
  std::shared_ptr<runtime::ProcessExtension> ext;
  {
    std::lock_guard lock(m_mutex);
    auto it = m_loaded.find(id);
    if (it == m_loaded.end()) co_return Error::usage("Extension '" + id + "' not found").because(ErrorCause::not_found);
    ext = it->second.ext;
    m_loaded.erase(it);
  }
  forget(id);
  std::erase_if(m_stopping, [](const auto& weak) { return weak.expired(); });
  m_stopping.push_back(ext);
  co_await ext->shutdown();
  co_return Result<void>();
}

asio::awaitable<Result<ExtensionInfo>> ExtensionManager::reload(std::string id) {
  fs::path dir;
  {
    std::lock_guard lock(m_mutex);
    auto it = m_loaded.find(id);
    if (it == m_loaded.end()) co_return Error::usage("Extension '" + id + "' not found").because(ErrorCause::not_found);
    dir = it->second.manifest.plugin_dir;
  }
  auto unloaded = co_await unload(id);
  if (!unloaded) co_return std::move(unloaded).error();
  co_return co_await load(dir);
}

asio::awaitable<void> ExtensionManager::shutdown_all() {
  ++m_shutdowns;  // loads under way give up at their next step
  std::map<std::string, Loaded> all;
  {
    std::lock_guard lock(m_mutex);
    all.swap(m_loaded);
  }
  std::vector<asio::awaitable<void>> stops;
  std::erase_if(m_stopping, [](const auto& weak) { return weak.expired(); });
  std::vector<std::shared_ptr<runtime::ProcessExtension>> exts;
  for (auto& [id, loaded] : all) {
    forget(id);
    exts.push_back(loaded.ext);
  }
  for (auto& [id, ext] : m_loading) {
    if (ext) exts.push_back(ext);
  }
  for (auto& ext : exts) {
    m_stopping.push_back(ext);
    stops.push_back(stop(ext));
  }
  m_discovered.reset();
  m_session_injections.clear();
  if (stops.empty()) co_return;
  const bool in_time = co_await rpc::join_all(m_io, std::move(stops), k_shutdown_all_bound);
  if (!in_time) {
    for (auto& ext : exts) {
      if (ext->has_live_child()) {
        util::log().warn("extension '{}': still stopping after {} ms; killed", ext->id(), k_shutdown_all_bound.count());
        ext->force_shutdown();
      }
    }
  }
}

void ExtensionManager::kill_all() {
  std::vector<std::shared_ptr<runtime::ProcessExtension>> targets;
  {
    std::lock_guard lock(m_mutex);
    for (auto& [id, loaded] : m_loaded) targets.push_back(loaded.ext);
  }
  for (auto& [id, ext] : m_loading) {
    if (ext) targets.push_back(ext);
  }
  for (auto& weak : m_stopping) {
    if (auto ext = weak.lock()) targets.push_back(std::move(ext));
  }
  std::erase_if(m_stopping, [](const auto& weak) { return weak.expired(); });
  for (auto& ext : targets) {
    if (ext->has_live_child()) ext->force_shutdown();
  }
}

namespace {

// What a discovery finds on disk: plugin directories by name (a later root replaces an
// earlier one), the roots that could not be read, and the disabled names. Blocking.
struct DiscoveryScan {
  std::map<std::string, fs::path> plugins;
  std::vector<LoadFailure> unreadable;
  std::vector<std::string> disabled;
};

DiscoveryScan scan_plugins(const std::vector<fs::path>& roots, const fs::path& host_config_file) {
  DiscoveryScan scan;
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::exists(root, ec)) continue;
    fs::directory_iterator it(root, ec);
    if (ec) {
      scan.unreadable.push_back(LoadFailure{"plugins", std::nullopt,
                                            "Failed to read plugins directory: " + util::os_error_text(ec.value()),
                                            "Check directory permissions and retry"});
      continue;
    }
    for (auto end = fs::directory_iterator(); it != end; it.increment(ec)) {
      if (ec) break;
      std::error_code dir_ec;
      if (it->is_directory(dir_ec)) scan.plugins[it->path().filename().string()] = it->path();
    }
    if (ec) {
      scan.unreadable.push_back(LoadFailure{"plugins", std::nullopt,
                                            "Failed to read plugins directory: " + util::os_error_text(ec.value()),
                                            "Check directory permissions and retry"});
    }
  }
  // A host config file that cannot be read leaves unknown which plugins were meant to stay
  // off: nothing is loaded rather than something the user disabled.
  auto disabled = read_disabled_plugins(host_config_file);
  if (!disabled) {
    scan.plugins.clear();
    scan.unreadable.push_back(LoadFailure{"plugins", std::nullopt,
                                          "Failed to read disabled_plugins: " + disabled.error().message,
                                          "Make the host config file a regular file under 1 MiB, then retry"});
    return scan;
  }
  scan.disabled = std::move(disabled).value();
  return scan;
}

}  // namespace

asio::awaitable<DiscoveryReport> ExtensionManager::discover(std::function<void(const DiscoveryEvent&)> progress) {
  auto report_event = [&](DiscoveryEvent e) {
    if (progress) progress(e);
  };
  // One discovery at a time: a second one waits for the first and replays its report.
  while (m_discovering) co_await m_discovery_done.wait();
  if (m_discovered) {
    // Idempotent: replay the first discovery without spawning anything.
    DiscoveryReport replay = *m_discovered;
    report_event(DiscoveryEvent{DiscoveryEvent::Kind::started, {}, std::nullopt, 0, 0});
    report_event(DiscoveryEvent{DiscoveryEvent::Kind::finished, {}, std::nullopt, replay.loaded.size(),
                                replay.failed.size()});
    co_return replay;
  }
  m_discovering = true;
  struct Done {
    ExtensionManager& manager;
    std::weak_ptr<const bool> alive;
    ~Done() {
      if (!alive.lock()) return;  // the Host was destroyed with this discovery suspended
      manager.m_discovering = false;
      manager.m_discovery_done.notify();
    }
  } done{*this, m_alive};
  const std::uint64_t shutdowns = m_shutdowns;
  report_event(DiscoveryEvent{DiscoveryEvent::Kind::started, {}, std::nullopt, 0, 0});
  DiscoveryReport report;
  std::vector<fs::path> roots{m_options.home.plugins_dir()};
  bool project_disabled = false;
  for (const char* name : {"EXTHOST_DISABLE_PROJECT_PLUGINS", "SYNAPS_DISABLE_PROJECT_PLUGINS"}) {
    auto v = m_options.env ? m_options.env(name) : std::nullopt;
    if (v) {
      project_disabled = util::is_truthy(*v);
      break;
    }
  }
  if (m_options.project_dir && !project_disabled) roots.push_back(*m_options.project_dir / ".exthost" / "plugins");
  // The scan touches the disk (and may throw): off the I/O thread.
  // Built before the co_await: no temporary lives across the suspension.
  auto scan_op = on_workers(
      m_store_workers,
      [roots, home_root = roots.front(), config = m_options.home.host_config_file()]() mutable {
        std::error_code ec;
        if (roots.size() > 1 && fs::equivalent(roots[1], home_root, ec)) roots.pop_back();
        return scan_plugins(roots, config);
      },
      [](std::string what) {
        DiscoveryScan failed;
        failed.unreadable.push_back(
            LoadFailure{"plugins", std::nullopt, "Failed to read plugins directory: " + what, "Check directory permissions and retry"});
        return failed;
      });
  auto scan = co_await std::move(scan_op);
  for (auto& f : scan.unreadable) {
    report.failed.push_back(f);
    report_event(DiscoveryEvent{DiscoveryEvent::Kind::failed, f.plugin, f, report.loaded.size(), report.failed.size()});
  }
  for (const auto& [name, dir] : scan.plugins) {
    if (m_shutdowns != shutdowns) break;  // shutdown_all() came meanwhile: load nothing more
    if (std::find(scan.disabled.begin(), scan.disabled.end(), name) != scan.disabled.end()) continue;
    const fs::path manifest_path = dir / k_manifest_path;
    // Built before the co_await: no temporary lives across the suspension.
    auto manifest_op = on_workers(
        m_store_workers,
        [dir, manifest_path]() -> std::optional<Result<std::optional<Manifest>>> {
          std::error_code ec;
          if (!fs::exists(manifest_path, ec)) return std::nullopt;  // not a plugin with a manifest
          return read_manifest(dir);
        },
        [dir](std::string what) -> std::optional<Result<std::optional<Manifest>>> {
          return Result<std::optional<Manifest>>(
              Error::manifest("Failed to read plugin manifest in " + dir.string() + ": " + what));
        });
    auto manifest = co_await std::move(manifest_op);
    if (!manifest) continue;  // skipped silently
    Result<ExtensionInfo> loaded = Error::internal("not loaded");
    std::optional<std::string> setup;  // for the missing-binary hint
    std::string id;
    if (!*manifest) {
      loaded = std::move(*manifest).error();
    } else if (!(*manifest)->has_value()) {
      continue;  // a plugin without an extension block is not an extension
    } else {
      setup = (**manifest)->setup;
      id = (**manifest)->id;
      loaded = co_await load_manifest(std::move(***manifest));
    }
    // Loaded meanwhile by an explicit load of the same plugin: it runs, it did not fail.
    if (!loaded && !id.empty() && find(id)) loaded = *info(id);
    if (m_shutdowns != shutdowns) break;  // stopped while loading: not the plugin's failure
    if (loaded) {
      report.loaded.push_back(name);
      report_event(DiscoveryEvent{DiscoveryEvent::Kind::loaded, name, std::nullopt, report.loaded.size(),
                                  report.failed.size()});
    } else {
      const std::string reason = loaded.error().message;
      LoadFailure f{name, manifest_path, reason, load_hint(reason, dir, setup)};
      util::log().warn("{}", f.concise_message());
      report.failed.push_back(f);
      report_event(DiscoveryEvent{DiscoveryEvent::Kind::failed, name, f, report.loaded.size(), report.failed.size()});
    }
  }
  if (m_shutdowns == shutdowns) m_discovered = report;
  report_event(DiscoveryEvent{DiscoveryEvent::Kind::finished, {}, std::nullopt, report.loaded.size(),
                              report.failed.size()});
  co_return report;
}

asio::awaitable<Result<boost::json::value>> ExtensionManager::call_tool(std::string name, boost::json::value input,
                                                                       ToolCallContext context) {
  auto tool = m_tools.find(name);
  if (!tool) co_return Error::usage("unknown tool '" + name + "'").because(ErrorCause::not_found);
  auto ext = find(tool->plugin_id);
  if (!ext) co_return Error::usage("Extension '" + tool->plugin_id + "' not found").because(ErrorCause::not_found);
  // A call by API name comes from a model that saw the API schema: restore the declared
  // property names before anything else sees the input.
  if (name != tool->runtime_name) input = restore_input_names(tool->input_schema, input);
  // Without subscribers the hooks are no-ops: the events are not even built.
  if (!m_hooks.has_subscribers(protocol::HookKind::before_tool_call) &&
      !m_hooks.has_subscribers(protocol::HookKind::after_tool_call)) {
    co_return co_await ext->call_tool_for(tool->tool_name, std::move(input), context.session_id, context.cwd);
  }
  const bool with_session = protocol::hook_session_id_enabled();

  protocol::HookEvent before;
  before.kind = protocol::HookKind::before_tool_call;
  before.tool_name = tool->api_name;
  before.tool_runtime_name = tool->runtime_name;
  before.tool_input = input;
  if (with_session) before.session_id = context.session_id;
  before.cwd = protocol::hook_cwd(context.cwd);
  auto verdict = co_await m_hooks.emit(std::move(before));
  auto decision = resolve_before_tool_call(verdict.result, std::move(input), m_options.auto_approve_confirmations);
  if (decision.blocked) {
    co_return blocked_tool_call(tool->runtime_name, *decision.blocked, verdict.extension_id, verdict.fail_closed);
  }

  auto result = co_await ext->call_tool_for(tool->tool_name, decision.input, context.session_id, context.cwd);
  if (!result) co_return result;

  protocol::HookEvent after;
  after.kind = protocol::HookKind::after_tool_call;
  after.tool_name = tool->api_name;
  after.tool_runtime_name = tool->runtime_name;
  after.tool_input = decision.input;  // what actually ran
  after.tool_output = hook_output_preview(tool_output_text(result.value()));
  if (with_session) after.session_id = context.session_id;
  after.cwd = protocol::hook_cwd(context.cwd);
  auto transformed = co_await m_hooks.emit(std::move(after));
  if (auto replaced = resolve_after_tool_call(transformed.result)) co_return boost::json::value(std::move(*replaced));
  co_return result;
}

asio::awaitable<protocol::HookResult> ExtensionManager::emit(protocol::HookEvent event) {
  if (event.kind == protocol::HookKind::on_session_end) co_return co_await m_hooks.emit_concurrent(std::move(event));
  auto verdict = co_await m_hooks.emit(std::move(event));
  co_return std::move(verdict.result);
}

asio::awaitable<std::optional<std::string>> ExtensionManager::session_start(std::string session_id) {
  protocol::HookEvent event;
  event.kind = protocol::HookKind::on_session_start;
  event.session_id = session_id;
  auto verdict = co_await m_hooks.emit(std::move(event));
  if (const auto* inject = std::get_if<hr::Inject>(&verdict.result)) {
    m_session_injections[session_id] = inject->content;
    co_return inject->content;
  }
  co_return std::nullopt;
}

std::optional<std::string> ExtensionManager::session_injection(const std::string& session_id) const {
  auto it = m_session_injections.find(session_id);
  if (it == m_session_injections.end()) return std::nullopt;
  return it->second;
}

namespace {
// Boxed: Asio's `||` would flatten the HookResult variant into its own.
asio::awaitable<std::optional<protocol::HookResult>> emit_concurrent_boxed(HookBus& bus, protocol::HookEvent event) {
  co_return co_await bus.emit_concurrent(std::move(event));
}
}  // namespace

asio::awaitable<bool> ExtensionManager::session_end(std::string session_id,
                                                    std::optional<boost::json::value> transcript) {
  protocol::HookEvent event;
  event.kind = protocol::HookKind::on_session_end;
  event.session_id = session_id;
  event.transcript = std::move(transcript);
  asio::steady_timer budget(m_io, k_session_end_budget);
  auto raced = co_await (emit_concurrent_boxed(m_hooks, std::move(event)) ||
                         budget.async_wait(asio::as_tuple(asio::use_awaitable)));
  m_session_injections.erase(session_id);
  if (raced.index() == 1) {
    util::log().warn("on_session_end for session '{}' ran out of its {} ms budget", session_id,
                     k_session_end_budget.count());
    co_return false;
  }
  co_return true;
}

Health ExtensionManager::health_of(const std::string& id, const runtime::ProcessExtension& ext) const {
  const Health h = ext.health();
  // Serving, but a hook of it is suspended for not answering.
  if (h == Health::running && m_hooks.has_suspended(id)) return Health::degraded;
  return h;
}

std::shared_ptr<runtime::ProcessExtension> ExtensionManager::find(const std::string& id) const {
  std::lock_guard lock(m_mutex);
  auto it = m_loaded.find(id);
  return it == m_loaded.end() ? nullptr : it->second.ext;
}

std::vector<std::string> ExtensionManager::ids() const {
  std::lock_guard lock(m_mutex);
  std::vector<std::string> out;
  for (const auto& [id, loaded] : m_loaded) out.push_back(id);
  return out;
}

std::optional<ExtensionInfo> ExtensionManager::info(const std::string& id) const {
  std::lock_guard lock(m_mutex);
  auto it = m_loaded.find(id);
  if (it == m_loaded.end()) return std::nullopt;
  ExtensionInfo info = it->second.info;
  const auto& ext = it->second.ext;
  info.health = health_of(id, *ext);
  const auto snap = ext->lifecycle_snapshot();
  info.generation = snap ? snap->generation : 0;
  info.restart_count = ext->restart_count();
  info.tools.clear();
  for (const auto& t : m_tools.tools_of(id)) {
    info.tools.push_back(ToolInfo{t.tool_name, t.runtime_name, t.api_name, t.description, wire::to_json(t.input_schema),
                                  wire::to_json(t.api_input_schema), t.idempotent});
  }
  info.providers.clear();
  for (const auto& summary : m_providers.summaries(id)) {
    ProviderInfo provider{summary.runtime_id, summary.display_name, {}};
    for (const auto& model : summary.models) {
      provider.models.push_back(ProviderModelInfo{model.runtime_id, model.display_name, model.tool_use, model.streaming,
                                                  model.context_window});
    }
    info.providers.push_back(std::move(provider));
  }
  info.hooks.clear();
  for (const auto& [kind, tool] : m_hooks.subscriptions_for(id)) {
    info.hooks.push_back(HookInfo{std::string(protocol::to_string(kind)), tool});
  }
  return info;
}

std::optional<ExtensionStats> ExtensionManager::stats(const std::string& id) const {
  auto ext = find(id);
  if (!ext) return std::nullopt;
  ExtensionStats s;
  const auto& c = ext->inbox().counters();
  s.frames_in = c.frames_in;
  s.bytes_in = c.bytes_in;
  s.frames_out = c.frames_out;
  s.bytes_out = c.bytes_out;
  s.notifications_delivered = c.notifications_delivered;
  s.notifications_dropped = c.notifications_dropped;
  s.late_replies = c.late_replies;
  s.discarded_frames = c.discarded_frames;
  s.cancel_notifications = c.cancel_notifications;
  s.inbound_requests = c.inbound_requests;
  s.inbound_in_flight_peak = c.inbound_in_flight_peak;
  const auto& budget = ext->inbox().budget();
  s.queued_frames_peak = budget.peak_frames();
  s.queued_bytes_peak = budget.peak_bytes();
  s.queue_budget_waits = budget.waits();
  const auto& o = ext->outcomes();
  s.calls_ok = o.ok;
  s.calls_application_error = o.application_error;
  s.calls_transport_error = o.transport_error;
  s.calls_timeout = o.timeout;
  s.calls_cancelled = o.abandoned > o.timeout ? o.abandoned - o.timeout : 0;
  s.restarts = ext->restart_count();
  const auto snap = ext->lifecycle_snapshot();
  s.generation = snap ? snap->generation : 0;
  s.health = health_of(id, *ext);
  s.stderr_tail = ext->stderr_tail();
  s.last_exit = ext->exit_description();
  return s;
}

std::optional<ConfigDiagnostics> ExtensionManager::config_diagnostics(const std::string& id) const {
  std::vector<ConfigEntry> entries;
  std::vector<std::pair<std::string, std::vector<std::string>>> provider_required;
  {
    std::lock_guard lock(m_mutex);
    auto it = m_loaded.find(id);
    if (it == m_loaded.end()) return std::nullopt;
    entries = it->second.manifest.config;
    provider_required = it->second.provider_required;
  }
  // Resolved again now: a key satisfied at load may have gone from the environment or files.
  return diagnose_config(id, entries, config_sources(id), provider_required);
}

}  // namespace exthost::host
