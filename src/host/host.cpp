#include "exthost/host.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <csignal>
#include <map>
#include <mutex>
#include <thread>

#include "process/cgroup.hpp"
#include "host/extension_manager.hpp"
#include "host/home.hpp"
#include "protocol/ui_event.hpp"
#include "runtime/invoke_collected.hpp"
#include "runtime/process_extension.hpp"
#include "runtime/provider_tool_loop.hpp"
#include "util/log.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

// Threads for blocking store calls: two, so one slow disk write does not queue every read.
constexpr std::size_t k_store_workers = 2;

struct Host::Impl {
  HostOptions options;
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
  // Blocking store calls (SQLite, config files) run here, never on the I/O thread.
  asio::thread_pool store_workers{k_store_workers};
  std::unique_ptr<host::ExtensionManager> manager;

  runtime::Timeouts timeouts() const {
    runtime::Timeouts t;
    t.tool_call = options.tool_call_timeout;
    t.initialize = options.initialize_timeout;
    t.other = options.other_timeout;
    t.command_invoke = options.command_invoke_timeout;
    t.provider_complete = options.provider_timeout;
    t.provider_stream = options.provider_timeout;
    t.quick = options.quick_timeout;
    t.shutdown_request = options.shutdown_request_timeout;
    t.shutdown_grace = options.shutdown_grace;
    return t;
  }

  std::shared_ptr<runtime::ProcessExtension> find(const std::string& id) const { return manager->find(id); }

  // Runs `coro` on the I/O thread and waits for its result.
  template <class T>
  T run(asio::awaitable<T> coro) {
    return asio::co_spawn(io, std::move(coro), asio::use_future).get();
  }
  // Runs `coro` on the I/O thread and hands its result to `done` there, without waiting.
  template <class T>
  void start(asio::awaitable<Result<T>> coro, Completion<T> done) {
    asio::co_spawn(io, std::move(coro), [done = std::move(done)](std::exception_ptr e, Result<T> r) {
      if (e) r = Error::internal("operation failed inside the host");
      if (done) done(std::move(r));
    });
  }
  // Runs `f` on the I/O thread and waits for its result.
  template <class F>
  auto on_io(F f) -> decltype(f()) {
    return asio::post(io, std::packaged_task<decltype(f())()>(std::move(f))).get();
  }
};

namespace {

asio::awaitable<Result<std::string>> call_tool_on_io(host::ExtensionManager* manager, std::string name,
                                                     std::string input_json, ToolCallContext context) {
  wire::JsonParser parser;
  auto input = parser.parse(input_json.empty() ? std::string("{}") : input_json);
  if (!input) {
    co_return Error::usage("tool '" + name + "' method 'tool.call': invalid input JSON: " + input.error().message);
  }
  auto result = co_await manager->call_tool(std::move(name), std::move(input).value(), std::move(context));
  if (!result) co_return std::move(result).error();
  co_return wire::to_json(result.value());
}


Result<boost::json::value> parse_json_arg(const std::string& id, const char* method, const std::string& text) {
  wire::JsonParser parser;
  auto v = parser.parse(text.empty() ? std::string("{}") : text);
  if (!v) return Error::usage("Extension '" + id + "' method '" + method + "': invalid JSON: " + v.error().message);
  return v;
}

std::string json_text(const boost::json::value& v) { return wire::to_json(v); }

std::string event_text(const runtime::InvokeCommandEvent& e) {
  if (const auto* o = std::get_if<protocol::CommandOutputEvent>(&e)) return json_text(protocol::to_json(*o));
  return json_text(protocol::to_json(std::get<protocol::TaskEvent>(e)));
}

asio::awaitable<Result<CommandOutput>> invoke_on_io(std::shared_ptr<runtime::ProcessExtension> ext, std::string command,
                                                    std::vector<std::string> args, EventCallback on_event) {
  runtime::RetainedEventObserver observer;
  if (on_event) observer = [&on_event](const runtime::InvokeCommandEvent& e) { on_event(event_text(e)); };
  auto collected = co_await runtime::invoke_command_collected(*ext, std::move(command), std::move(args),
                                                             runtime::fresh_request_id(), {}, std::move(observer));
  if (!collected.result) co_return std::move(collected.result).error();
  CommandOutput out;
  out.result_json = json_text(collected.result.value());
  for (const auto& e : collected.report.events) out.events_json.push_back(event_text(e));
  const auto& c = collected.report.counters;
  out.counters = OutputCounters{c.produced_events, c.produced_payload_bytes, c.retained_events, c.retained_payload_bytes,
                                c.truncated_events, c.truncated_payload_bytes, c.dropped_events, c.dropped_payload_bytes,
                                c.dropped_error_events, c.saw_done};
  if (auto notice = collected.report.limit_notice()) {
    out.limit_notice = notice->message;
    out.limit_notice_is_error = notice->severity_error;
  }
  co_return out;
}

asio::awaitable<Result<std::string>> complete_on_io(std::shared_ptr<runtime::ProcessExtension> ext, std::string params) {
  auto p = parse_json_arg(ext->id(), "provider.complete", params);
  if (!p) co_return std::move(p).error();
  auto r = co_await ext->provider_complete(std::move(p).value());
  if (!r) co_return std::move(r).error();
  co_return json_text(protocol::to_json(r.value()));
}

asio::awaitable<void> deliver_stream(runtime::ProviderEventSink& sink, EventCallback& on_event) {
  for (;;) {
    auto e = co_await sink.pop();
    if (!e) co_return;
    if (on_event) on_event(json_text(protocol::to_json(*e)));
  }
}

asio::awaitable<Result<protocol::ProviderCompleteResult>> stream_then_close(std::shared_ptr<runtime::ProcessExtension> ext,
                                                                            boost::json::value params,
                                                                            runtime::ProviderEventSink& sink) {
  auto r = co_await ext->provider_stream(std::move(params), sink);
  sink.close();  // the consumer drains what is left, then ends
  co_return r;
}

asio::awaitable<Result<std::string>> stream_on_io(std::shared_ptr<runtime::ProcessExtension> ext, std::string params,
                                                  EventCallback on_event) {
  auto p = parse_json_arg(ext->id(), "provider.stream", params);
  if (!p) co_return std::move(p).error();
  runtime::ProviderEventSink sink(co_await asio::this_coro::executor);
  auto r = co_await (stream_then_close(ext, std::move(p).value(), sink) && deliver_stream(sink, on_event));
  if (!r) co_return std::move(r).error();
  co_return json_text(protocol::to_json(r.value()));
}

// The embedder's ProviderTools behind the runtime's gate and runner interfaces.
class ToolsAdapter final : public runtime::ToolGate, public runtime::ToolRunner {
 public:
  explicit ToolsAdapter(ProviderTools tools) : m_tools(std::move(tools)) {}
  asio::awaitable<std::optional<std::string>> deny(const protocol::ProviderToolUse& use) override {
    if (!m_tools.deny || !m_tools.run) co_return co_await m_default.deny(use);
    co_return m_tools.deny(use.name, json_text(use.input));
  }
  asio::awaitable<Result<std::string>> run(const protocol::ProviderToolUse& use) override {
    co_return m_tools.run(use.name, json_text(use.input));
  }

 private:
  ProviderTools m_tools;
  runtime::DenyAllTools m_default;
};

// A model's tool output is cut at 64 KiB before it goes back into the conversation.
constexpr std::size_t k_max_provider_tool_output = 64 * 1024;

asio::awaitable<Result<std::string>> tools_loop_on_io(std::shared_ptr<runtime::ProcessExtension> ext, std::string params,
                                                      ProviderTools tools, std::size_t max_iterations,
                                                      std::uint32_t* tools_requested) {
  auto p = parse_json_arg(ext->id(), "provider.complete", params);
  if (!p) co_return std::move(p).error();
  ToolsAdapter adapter(std::move(tools));
  std::uint32_t requested = 0;
  auto r = co_await runtime::complete_provider_with_tools(*ext, std::move(p).value(), adapter, adapter,
                                                          k_max_provider_tool_output, max_iterations, requested);
  if (tools_requested) *tools_requested = requested;
  if (!r) co_return std::move(r).error();
  co_return json_text(protocol::to_json(r.value()));
}

asio::awaitable<Result<std::string>> info_on_io(std::shared_ptr<runtime::ProcessExtension> ext) {
  auto r = co_await ext->get_info();
  if (!r) co_return std::move(r).error();
  co_return json_text(protocol::to_json(r.value()));
}

asio::awaitable<Result<std::string>> json_result_on_io(asio::awaitable<Result<boost::json::value>> op) {
  auto r = co_await std::move(op);
  if (!r) co_return std::move(r).error();
  co_return json_text(r.value());
}

asio::awaitable<Result<std::string>> sidecar_on_io(std::shared_ptr<runtime::ProcessExtension> ext) {
  auto r = co_await ext->sidecar_spawn_args();
  if (!r) co_return std::move(r).error();
  boost::json::object o;
  o["args"] = boost::json::array(r->args.begin(), r->args.end());
  o["language"] = r->language ? boost::json::value(*r->language) : boost::json::value(nullptr);
  co_return json_text(o);
}

asio::awaitable<void> watch_on_io(std::shared_ptr<runtime::ProcessExtension> ext, rpc::Subscription subscription,
                                  EventCallback on_event) {
  const std::string id = ext->id();
  ext.reset();  // the watcher must not keep an unloaded extension alive
  for (;;) {
    auto frame = co_await subscription.queue().pop();
    if (!frame) co_return;  // the extension was stopped
    Result<protocol::UiEvent> event = Error::internal("not a UI event");
    if (protocol::is_widget_method(frame->method)) {
      event = protocol::parse_widget_event(frame->method, frame->params);
    } else if (protocol::is_settings_editor_method(frame->method)) {
      event = protocol::parse_settings_editor_event(frame->method, frame->params);
    } else {
      continue;
    }
    if (!event) {
      util::log().warn("extension '{}': Skipping malformed {} notification: {}", id, frame->method, event.error().message);
      continue;
    }
    if (on_event) on_event(json_text(protocol::to_json(event.value())));
  }
}

}  // namespace

namespace {
asio::awaitable<Result<std::string>> emit_on_io(host::ExtensionManager* manager, std::string event_json) {
  wire::JsonParser parser;
  auto parsed = parser.parse(event_json);
  if (!parsed) co_return Error::usage("invalid hook event: " + parsed.error().message);
  auto event = protocol::parse_hook_event(parsed.value());
  if (!event) co_return std::move(event).error();
  auto result = co_await manager->emit(std::move(event).value());
  co_return json_text(protocol::to_json(result));
}
asio::awaitable<Result<CommandOutput>> not_found_on_io(std::string id) {
  co_return Error::usage("Extension '" + id + "' not found");
}
asio::awaitable<Result<std::string>> not_found_text_on_io(std::string id) {
  co_return Error::usage("Extension '" + id + "' not found");
}
}  // namespace

Host::Host(HostOptions options) : m_impl(std::make_unique<Impl>()) {
  std::signal(SIGPIPE, SIG_IGN);
  process::prepare_cgroups();  // once per process: the first extension's spawn need not probe
  m_impl->options = options;
  host::ManagerOptions m;
  m.timeouts = m_impl->timeouts();
  m.env = options.env ? options.env : host::process_env();
  m.home.root = options.home.empty() ? host::resolve_home(m.env) : options.home;
  if (!options.project_dir.empty()) m.project_dir = options.project_dir;
  m.auto_approve_confirmations = options.auto_approve_confirmations;
  m.limits = options.limits;
  m_impl->manager = std::make_unique<host::ExtensionManager>(m_impl->io.get_executor(),
                                                             m_impl->store_workers.get_executor(), std::move(m));
  m_impl->thread = std::thread([impl = m_impl.get()] { impl->io.run(); });
}

Host::~Host() {
  shutdown_all();
  m_impl->work.reset();
  m_impl->io.stop();
  m_impl->thread.join();
  m_impl->store_workers.join();
  m_impl->manager.reset();
}

Result<ExtensionInfo> Host::load(const std::filesystem::path& plugin_dir) {
  return m_impl->run(m_impl->manager->load(plugin_dir));
}

Result<ExtensionInfo> Host::reload(const std::string& id) { return m_impl->run(m_impl->manager->reload(id)); }

DiscoveryReport Host::discover(std::function<void(const DiscoveryEvent&)> progress) {
  return m_impl->run(m_impl->manager->discover(std::move(progress)));
}

Result<std::string> Host::call_tool(const std::string& id, const std::string& tool, const std::string& input_json,
                                    const ToolCallContext& context) {
  if (!m_impl->find(id)) return Error::usage("Extension '" + id + "' not found");
  return call_named_tool(id + ":" + tool, input_json, context);
}

Result<std::string> Host::call_named_tool(const std::string& name, const std::string& input_json,
                                          const ToolCallContext& context) {
  return m_impl->run(call_tool_on_io(m_impl->manager.get(), name, input_json, context));
}

Result<std::string> Host::emit_hook(const std::string& event_json) {
  return m_impl->run(emit_on_io(m_impl->manager.get(), event_json));
}

void Host::load(const std::filesystem::path& plugin_dir, Completion<ExtensionInfo> done) {
  m_impl->start(m_impl->manager->load(plugin_dir), std::move(done));
}

void Host::unload(const std::string& id, Completion<void> done) {
  m_impl->start(m_impl->manager->unload(id), std::move(done));
}

void Host::call_named_tool(const std::string& name, const std::string& input_json, const ToolCallContext& context,
                           Completion<std::string> done) {
  m_impl->start(call_tool_on_io(m_impl->manager.get(), name, input_json, context), std::move(done));
}


void Host::emit_hook(const std::string& event_json, Completion<std::string> done) {
  m_impl->start(emit_on_io(m_impl->manager.get(), event_json), std::move(done));
}

void Host::invoke_command(const std::string& id, const std::string& command, const std::vector<std::string>& args,
                          Completion<CommandOutput> done) {
  auto ext = m_impl->find(id);
  if (!ext) return m_impl->start(not_found_on_io(id), std::move(done));
  m_impl->start(invoke_on_io(std::move(ext), command, args, {}), std::move(done));
}

void Host::complete(const std::string& id, const std::string& params_json, Completion<std::string> done) {
  auto ext = m_impl->find(id);
  if (!ext) return m_impl->start(not_found_text_on_io(id), std::move(done));
  m_impl->start(complete_on_io(std::move(ext), params_json), std::move(done));
}

std::optional<std::string> Host::session_start(const std::string& session_id) {
  return m_impl->run(m_impl->manager->session_start(session_id));
}

std::optional<std::string> Host::session_injection(const std::string& session_id) const {
  return m_impl->on_io([impl = m_impl.get(), session_id] { return impl->manager->session_injection(session_id); });
}

Result<bool> Host::session_end(const std::string& session_id, const std::string& transcript_json) {
  std::optional<boost::json::value> transcript;
  if (!transcript_json.empty()) {
    wire::JsonParser parser;
    auto parsed = parser.parse(transcript_json);
    if (!parsed) return Error::usage("on_session_end: invalid transcript JSON: " + parsed.error().message);
    if (!parsed->is_array()) return Error::usage("on_session_end: the transcript must be a JSON array");
    transcript = std::move(parsed).value();
  }
  return m_impl->run(m_impl->manager->session_end(session_id, std::move(transcript)));
}

std::vector<ExtensionInfo> Host::list() const {
  return m_impl->on_io([impl = m_impl.get()] {
    std::vector<ExtensionInfo> out;
    for (const auto& id : impl->manager->ids()) {
      if (auto info = impl->manager->info(id)) out.push_back(std::move(*info));
    }
    return out;
  });
}

std::optional<ExtensionInfo> Host::extension_info(const std::string& id) const {
  return m_impl->on_io([impl = m_impl.get(), id] { return impl->manager->info(id); });
}

std::vector<ToolInfo> Host::tools() const {
  return m_impl->on_io([impl = m_impl.get()] {
    std::vector<ToolInfo> out;
    for (const auto& t : impl->manager->tools().tools()) {
      out.push_back(ToolInfo{t.tool_name, t.runtime_name, t.api_name, t.description, wire::to_json(t.input_schema),
                                      wire::to_json(t.api_input_schema)});
    }
    return out;
  });
}

Result<ExtensionStats> Host::stats(const std::string& id) const {
  auto s = m_impl->on_io([impl = m_impl.get(), id] { return impl->manager->stats(id); });
  if (!s) return Error::usage("Extension '" + id + "' not found");
  return std::move(*s);
}

Result<std::string> Host::config_report(const std::string& id) const {
  auto d = m_impl->on_io([impl = m_impl.get(), id] { return impl->manager->config_diagnostics(id); });
  if (!d) return Error::usage("Extension '" + id + "' not found");
  boost::json::object o;
  o["extension_id"] = d->extension_id;
  boost::json::array entries;
  for (const auto& e : d->entries) {
    boost::json::object entry;
    entry["key"] = e.key;
    entry["description"] = e.description ? boost::json::value(*e.description) : boost::json::value(nullptr);
    entry["required"] = e.required;
    entry["source"] = host::to_string(e.source.kind);
    entry["source_detail"] = e.source.detail.empty() ? boost::json::value(nullptr) : boost::json::value(e.source.detail);
    entry["has_value"] = e.has_value;
    entry["value"] = e.display_value ? boost::json::value(*e.display_value) : boost::json::value(nullptr);
    entries.push_back(std::move(entry));
  }
  o["entries"] = std::move(entries);
  boost::json::array missing;
  for (const auto& [provider, key] : d->provider_missing) {
    missing.push_back(boost::json::object{{"provider", provider}, {"key", key}});
  }
  o["provider_missing"] = std::move(missing);
  return json_text(o);
}

std::filesystem::path Host::home() const { return m_impl->manager->home().root; }

std::string LoadFailure::concise_message() const {
  if (manifest_path) return reason + " (manifest: " + manifest_path->string() + "; hint: " + hint + ")";
  return reason + " (hint: " + hint + ")";
}

namespace {
Error not_found(const std::string& id) { return Error::usage("Extension '" + id + "' not found"); }
}  // namespace

Result<CommandOutput> Host::invoke_command(const std::string& id, const std::string& command,
                                           const std::vector<std::string>& args) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(invoke_on_io(std::move(ext), command, args, {}));
}

Result<CommandOutput> Host::invoke_command(const std::string& id, const std::string& command,
                                           const std::vector<std::string>& args, EventCallback on_event) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(invoke_on_io(std::move(ext), command, args, std::move(on_event)));
}

Result<std::string> Host::complete(const std::string& id, const std::string& params_json) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(complete_on_io(std::move(ext), params_json));
}

Result<std::string> Host::stream(const std::string& id, const std::string& params_json, EventCallback on_event) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(stream_on_io(std::move(ext), params_json, std::move(on_event)));
}

Result<std::string> Host::complete_with_tools(const std::string& id, const std::string& params_json, ProviderTools tools,
                                              std::size_t max_iterations, std::uint32_t* tools_requested) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(tools_loop_on_io(std::move(ext), params_json, std::move(tools), max_iterations, tools_requested));
}

Result<std::string> Host::info(const std::string& id) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(info_on_io(std::move(ext)));
}

Result<std::string> Host::settings_editor_open(const std::string& id, const std::string& category,
                                               const std::string& field) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(json_result_on_io(ext->settings_editor_open(category, field)));
}

Result<std::string> Host::settings_editor_key(const std::string& id, const std::string& category, const std::string& field,
                                              const std::string& key) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(json_result_on_io(ext->settings_editor_key(category, field, key)));
}

Result<std::string> Host::settings_editor_commit(const std::string& id, const std::string& category,
                                                 const std::string& field, const std::string& value_json) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  auto value = parse_json_arg(id, "settings.editor.commit", value_json);
  if (!value) return std::move(value).error();
  return m_impl->run(json_result_on_io(ext->settings_editor_commit(category, field, std::move(value).value())));
}

Result<std::string> Host::sidecar_spawn_args(const std::string& id) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run(sidecar_on_io(std::move(ext)));
}

Result<void> Host::watch_ui_events(const std::string& id, EventCallback on_event) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  // Subscribed on the I/O thread before this returns: no later notification is missed.
  m_impl->run([](Host::Impl* impl, std::shared_ptr<runtime::ProcessExtension> e,
                 EventCallback cb) -> asio::awaitable<bool> {
    auto subscription = e->subscribe_notifications();
    asio::co_spawn(impl->io, watch_on_io(std::move(e), std::move(subscription), std::move(cb)), asio::detached);
    co_return true;
  }(m_impl.get(), std::move(ext), std::move(on_event)));
  return {};
}

Result<void> Host::unload(const std::string& id) { return m_impl->run(m_impl->manager->unload(id)); }

void Host::shutdown_all() { m_impl->run(m_impl->manager->shutdown_all()); }

void Host::kill_all() {
  m_impl->on_io([impl = m_impl.get()] { impl->manager->kill_all(); });
}

std::optional<Lifecycle> Host::lifecycle(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  return ext->lifecycle_snapshot();
}

std::optional<Health> Host::health(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  return ext->health();
}

std::string Host::stderr_tail(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return {};
  return m_impl->run([](std::shared_ptr<runtime::ProcessExtension> e) -> asio::awaitable<std::string> {
    co_return e->stderr_tail();
  }(ext));
}

std::optional<int> Host::child_pid(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  auto pid = m_impl->run(
      [](std::shared_ptr<runtime::ProcessExtension> e) -> asio::awaitable<std::optional<int>> {
        auto c = e->child();
        if (!c) co_return std::nullopt;
        co_return static_cast<int>(c->pid());
      }(ext));
  return pid;
}

}  // namespace exthost
