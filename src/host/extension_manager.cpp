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
#include "host/limits_policy.hpp"
#include "host/tool_hooks.hpp"
#include "protocol/tool_call.hpp"
#include "rpc/event.hpp"
#include "store/config_store.hpp"
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

std::vector<std::string> disabled_plugins(const fs::path& host_config_file) {
  std::vector<std::string> out;
  auto listed = store::read_config_value(host_config_file, "disabled_plugins");
  if (!listed) return out;
  std::string_view rest = *listed;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto item = util::trim(rest.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// Runs every awaitable at once and waits for all of them, or for `bound`; returns whether
// all finished in time. Each runs detached, so one left behind finishes on its own.
asio::awaitable<bool> join_all(asio::any_io_executor ex, std::vector<asio::awaitable<void>> ops,
                               std::chrono::milliseconds bound) {
  struct Gather {
    explicit Gather(const asio::any_io_executor& e, std::size_t n) : remaining(n), done(e) {}
    std::size_t remaining;
    rpc::Event done;
  };
  auto gather = std::make_shared<Gather>(ex, ops.size());
  for (auto& op : ops) {
    asio::co_spawn(ex, std::move(op), [gather](std::exception_ptr) {
      if (--gather->remaining == 0) gather->done.notify();
    });
  }
  asio::steady_timer deadline(ex, bound);
  bool expired = false;
  deadline.async_wait([gather, &expired](boost::system::error_code ec) {
    if (!ec) {
      expired = true;
      gather->done.notify();
    }
  });
  while (gather->remaining > 0 && !expired) co_await gather->done.wait();
  deadline.cancel();
  co_return gather->remaining == 0;
}

asio::awaitable<void> stop(std::shared_ptr<runtime::ProcessExtension> ext) { co_await ext->shutdown(); }

// Drops expired entries and `ext` from a list of extensions, when it goes out of scope.
class Unlisted {
 public:
  Unlisted(std::vector<std::weak_ptr<runtime::ProcessExtension>>& list, std::shared_ptr<runtime::ProcessExtension> ext)
      : m_list(list), m_ext(std::move(ext)) {
    std::erase_if(m_list, [](const auto& weak) { return weak.expired(); });
    m_list.push_back(m_ext);
  }
  ~Unlisted() {
    std::erase_if(m_list, [this](const auto& weak) {
      auto e = weak.lock();
      return !e || e == m_ext;
    });
  }
  Unlisted(const Unlisted&) = delete;
  Unlisted& operator=(const Unlisted&) = delete;

 private:
  std::vector<std::weak_ptr<runtime::ProcessExtension>>& m_list;
  std::shared_ptr<runtime::ProcessExtension> m_ext;
};

}  // namespace

ExtensionManager::ExtensionManager(asio::any_io_executor io, asio::any_io_executor store_workers,
                                   ManagerOptions options)
    : m_io(std::move(io)),
      m_store_workers(std::move(store_workers)),
      m_options(std::move(options)),
      m_memory(std::make_shared<SharedMemoryStore>(m_options.home.memory_db())) {}

ConfigSources ExtensionManager::config_sources(const std::string& id) const {
  ConfigSources s;
  s.env = m_options.env;
  s.plugin_config_file = m_options.home.plugin_config_file(id);
  s.host_config_file = m_options.home.host_config_file();
  if (m_options.project_dir) s.project_root = m_options.project_dir->string();
  return s;
}

asio::awaitable<Result<ExtensionInfo>> ExtensionManager::load(fs::path plugin_dir) {
  auto manifest = read_manifest(plugin_dir);
  if (!manifest) co_return std::move(manifest).error();
  if (!manifest->has_value()) {
    co_return Error::manifest("plugin '" + fs::absolute(plugin_dir).lexically_normal().filename().string() +
                              "' declares no extension (no 'extension' block in " + k_manifest_path + ")");
  }
  co_return co_await load_manifest(std::move(**manifest));
}

asio::awaitable<Result<ExtensionInfo>> ExtensionManager::load_manifest(Manifest m) {
  const std::string id = m.id;
  const std::string ext_name = "Extension '" + id + "'";
  const std::uint64_t shutdowns = m_shutdowns;
  const auto overtaken = [&] {
    return Error::extension(ext_name + " was stopped while loading: the host is shutting down");
  };
  // Configuration first: a missing value must not cost a process (SPEC §6.11.1 step 1).
  auto config = resolve_config(id, m.config, config_sources(id));
  if (!config) co_return std::move(config).error();
  if (find(id)) co_return Error::usage(ext_name + " is already loaded");
  if (auto valid = validate_limits(m_options.limits); !valid) co_return std::move(valid).error();
  auto limits = effective_limits(id, m_options.limits, m.limits);
  if (!limits) co_return std::move(limits).error();

  runtime::ProcessSpec spec;
  spec.id = id;
  spec.command = resolve_command(m);
  spec.args = resolve_args(m);
  spec.cwd = m.plugin_dir;
  spec.limits = limits.value();
  const ResourceLimits spec_limits = spec.limits;
  const auto started = std::chrono::steady_clock::now();
  auto spawned = co_await runtime::ProcessExtension::spawn(m_io, std::move(spec), m_options.timeouts);
  if (!spawned) co_return std::move(spawned).error();
  auto ext = std::move(spawned).value();
  const Unlisted loading(m_loading, ext);  // shutdown_all() and kill_all() reach it from now on
  if (m_shutdowns != shutdowns) {
    co_await ext->shutdown();
    co_return overtaken();
  }
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
  if (!init) {
    refused = init.error();
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
  if (refused) {
    m_providers.unregister_plugin(id);
    m_hooks.unsubscribe_all(id);
    co_await ext->shutdown();
    if (m_shutdowns != shutdowns) co_return overtaken();  // what failed was the stop's doing
    co_return std::move(*refused);
  }
  m_tools.register_plugin(id, init->tools);

  ExtensionInfo info;
  info.id = id;
  info.plugin_dir = m.plugin_dir;
  info.init_ms = std::chrono::duration<double, std::milli>(answered - started).count();
  info.limits = spec_limits;
  info.contained_by_cgroup = ext->child() && ext->child()->contained_by_cgroup();
  for (const auto& cap : capabilities) info.capabilities.push_back(CapabilityInfo{cap.kind, cap.name});
  // The optional info.get probe: best effort, never fails the load (SPEC §2.7).
  if (!init->tools.empty() || !init->providers.empty() || !capabilities.empty()) {
    auto probed = co_await ext->get_info();
    if (probed) {
      info.plugin_info_json = wire::to_json(protocol::to_json(probed.value()));
    } else if (probed.error().message.find("method not found") != std::string::npos ||
               probed.error().message.find("unknown method") != std::string::npos) {
      util::log().debug("extension '{}': no info.get: {}", id, probed.error().message);
    } else {
      util::log().warn("extension '{}': info.get failed: {}", id, probed.error().message);
    }
  }
  if (m_shutdowns != shutdowns) {  // it was stopped meanwhile: register nothing
    forget(id);
    co_await ext->shutdown();
    co_return overtaken();
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
    if (it == m_loaded.end()) co_return Error::usage("Extension '" + id + "' not found");
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
    if (it == m_loaded.end()) co_return Error::usage("Extension '" + id + "' not found");
    dir = it->second.manifest.plugin_dir;
  }
  auto unloaded = co_await unload(id);
  if (!unloaded) co_return std::move(unloaded).error();
  co_return co_await load(dir);
}

asio::awaitable<void> ExtensionManager::shutdown_all() {
  ++m_shutdowns;
  std::map<std::string, Loaded> all;
  {
    std::lock_guard lock(m_mutex);
    all.swap(m_loaded);
  }
  std::vector<asio::awaitable<void>> stops;
  std::vector<std::shared_ptr<runtime::ProcessExtension>> loading;
  std::erase_if(m_stopping, [](const auto& weak) { return weak.expired(); });
  for (auto& [id, loaded] : all) {
    forget(id);
    m_stopping.push_back(loaded.ext);
    stops.push_back(stop(loaded.ext));
  }
  for (auto& weak : m_loading) {  // their loads fail and register nothing
    if (auto ext = weak.lock()) {
      m_stopping.push_back(ext);
      stops.push_back(stop(ext));
      loading.push_back(std::move(ext));
    }
  }
  m_discovered.reset();
  m_session_injections.clear();
  if (stops.empty()) co_return;
  const bool in_time = co_await join_all(m_io, std::move(stops), k_shutdown_all_bound);
  if (!in_time) {
    for (auto& [id, loaded] : all) {
      if (loaded.ext->has_live_child()) {
        util::log().warn("extension '{}': still stopping after {} ms; killed", id, k_shutdown_all_bound.count());
        loaded.ext->force_shutdown();
      }
    }
    for (auto& ext : loading) {
      if (ext->has_live_child()) ext->force_shutdown();
    }
  }
}

void ExtensionManager::kill_all() {
  std::vector<std::shared_ptr<runtime::ProcessExtension>> targets;
  {
    std::lock_guard lock(m_mutex);
    for (auto& [id, loaded] : m_loaded) targets.push_back(loaded.ext);
  }
  for (const auto* list : {&m_stopping, &m_loading}) {
    for (const auto& weak : *list) {
      if (auto ext = weak.lock()) targets.push_back(std::move(ext));
    }
  }
  std::erase_if(m_stopping, [](const auto& weak) { return weak.expired(); });
  for (auto& ext : targets) {
    if (ext->has_live_child()) ext->force_shutdown();
  }
}

asio::awaitable<DiscoveryReport> ExtensionManager::discover(std::function<void(const DiscoveryEvent&)> progress) {
  auto report_event = [&](DiscoveryEvent e) {
    if (progress) progress(e);
  };
  if (m_discovered) {
    // Idempotent: replay the first discovery without spawning anything.
    DiscoveryReport replay = *m_discovered;
    report_event(DiscoveryEvent{DiscoveryEvent::Kind::started, {}, std::nullopt, 0, 0});
    report_event(DiscoveryEvent{DiscoveryEvent::Kind::finished, {}, std::nullopt, replay.loaded.size(),
                                replay.failed.size()});
    co_return replay;
  }
  report_event(DiscoveryEvent{DiscoveryEvent::Kind::started, {}, std::nullopt, 0, 0});
  const std::uint64_t shutdowns = m_shutdowns;
  DiscoveryReport report;
  std::map<std::string, fs::path> plugins;  // by name: a later root replaces an earlier one
  std::vector<fs::path> roots{m_options.home.plugins_dir()};
  bool project_disabled = false;
  for (const char* name : {"EXTHOST_DISABLE_PROJECT_PLUGINS", "SYNAPS_DISABLE_PROJECT_PLUGINS"}) {
    auto v = m_options.env ? m_options.env(name) : std::nullopt;
    if (v) {
      project_disabled = util::is_truthy(*v);
      break;
    }
  }
  if (m_options.project_dir && !project_disabled) {
    const fs::path project_root = *m_options.project_dir / ".exthost" / "plugins";
    std::error_code ec;
    if (!fs::equivalent(project_root, roots.front(), ec)) roots.push_back(project_root);
  }
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::exists(root, ec)) continue;
    fs::directory_iterator it(root, ec);
    if (ec) {
      LoadFailure f{"plugins", std::nullopt, "Failed to read plugins directory: " + util::os_error_text(ec.value()),
                    "Check directory permissions and retry"};
      report.failed.push_back(f);
      report_event(DiscoveryEvent{DiscoveryEvent::Kind::failed, f.plugin, f, report.loaded.size(), report.failed.size()});
      continue;
    }
    for (const auto& entry : it) {
      std::error_code dir_ec;
      if (entry.is_directory(dir_ec)) plugins[entry.path().filename().string()] = entry.path();
    }
  }
  const auto disabled = disabled_plugins(m_options.home.host_config_file());
  for (const auto& [name, dir] : plugins) {
    if (m_shutdowns != shutdowns) break;  // shutdown_all() overtook it: load nothing more
    if (std::find(disabled.begin(), disabled.end(), name) != disabled.end()) continue;
    std::error_code ec;
    const fs::path manifest_path = dir / k_manifest_path;
    if (!fs::exists(manifest_path, ec)) continue;  // not a plugin with a manifest: skipped silently
    auto manifest = read_manifest(dir);
    Result<ExtensionInfo> loaded = Error::internal("not loaded");
    std::optional<std::string> setup;  // for the missing-binary hint
    if (!manifest) {
      loaded = std::move(manifest).error();
    } else if (!manifest->has_value()) {
      continue;  // a plugin without an extension block is not an extension
    } else {
      setup = (**manifest).setup;
      loaded = co_await load_manifest(std::move(**manifest));
      if (m_shutdowns != shutdowns) break;  // stopped, not failed: neither loaded nor reported
    }
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
  if (m_shutdowns == shutdowns) m_discovered = report;  // an overtaken discovery is not replayed
  report_event(DiscoveryEvent{DiscoveryEvent::Kind::finished, {}, std::nullopt, report.loaded.size(),
                              report.failed.size()});
  co_return report;
}

asio::awaitable<Result<boost::json::value>> ExtensionManager::call_tool(std::string name, boost::json::value input,
                                                                       ToolCallContext context) {
  auto tool = m_tools.find(name);
  if (!tool) co_return Error::usage("unknown tool '" + name + "'");
  auto ext = find(tool->plugin_id);
  if (!ext) co_return Error::usage("Extension '" + tool->plugin_id + "' not found");
  // A call by API name comes from a model that saw the API schema: restore the declared
  // property names before anything else sees the input.
  if (name != tool->runtime_name) input = restore_input_names(tool->input_schema, input);
  const bool with_session = protocol::hook_session_id_enabled();

  protocol::HookEvent before;
  before.kind = protocol::HookKind::before_tool_call;
  before.tool_name = tool->api_name;
  before.tool_runtime_name = tool->runtime_name;
  before.tool_input = input;
  if (with_session) before.session_id = context.session_id;
  before.cwd = protocol::hook_cwd(context.cwd);
  auto verdict = co_await m_hooks.emit(std::move(before));
  auto decision = resolve_before_tool_call(verdict, std::move(input), m_options.auto_approve_confirmations);
  if (decision.blocked) co_return Error::extension("Tool '" + tool->runtime_name + "' blocked by hook: " + *decision.blocked);

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
  if (auto replaced = resolve_after_tool_call(transformed)) co_return boost::json::value(std::move(*replaced));
  co_return result;
}

asio::awaitable<protocol::HookResult> ExtensionManager::emit(protocol::HookEvent event) {
  if (event.kind == protocol::HookKind::on_session_end) co_return co_await m_hooks.emit_concurrent(std::move(event));
  co_return co_await m_hooks.emit(std::move(event));
}

asio::awaitable<std::optional<std::string>> ExtensionManager::session_start(std::string session_id) {
  protocol::HookEvent event;
  event.kind = protocol::HookKind::on_session_start;
  event.session_id = session_id;
  auto result = co_await m_hooks.emit(std::move(event));
  if (const auto* inject = std::get_if<hr::Inject>(&result)) {
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
  info.health = ext->health();
  const auto snap = ext->lifecycle_snapshot();
  info.generation = snap ? snap->generation : 0;
  info.restart_count = ext->restart_count();
  info.tools.clear();
  for (const auto& t : m_tools.tools_of(id)) {
    info.tools.push_back(ToolInfo{t.tool_name, t.runtime_name, t.api_name, t.description, wire::to_json(t.input_schema),
                                      wire::to_json(t.api_input_schema)});
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
  s.health = ext->health();
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
