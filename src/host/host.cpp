#include "exthost/host.hpp"

#include <boost/asio/co_spawn.hpp>
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
#include <thread>
#include <type_traits>

#include "process/cgroup.hpp"
#include "host/callback_thread.hpp"
#include "host/embedder_tools.hpp"
#include "util/exception_text.hpp"
#include "host/extension_manager.hpp"
#include "host/handoff_queue.hpp"
#include "host/result_slot.hpp"
#include "host/home.hpp"
#include "host/run_loop.hpp"
#include "host/stop_watch.hpp"
#include "host/ui_watcher.hpp"
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
// Threads for the embedder's ProviderTools (deny and run): tool loops of this many
// complete_with_tools() calls run tools at once; more wait for a free thread.
constexpr std::size_t k_provider_tool_workers = 4;
// Events a blocking call keeps ready for its caller's thread; past this many the operation
// waits (and the extension with it) until the caller's callback has taken some.
constexpr std::size_t k_caller_event_backlog = 64;

namespace {

// What an operation's coroutine yields, as the facade returns it: a Result, flattened.
template <class V>
struct AsResult {
  using type = Result<V>;
};
template <class T>
struct AsResult<Result<T>> {
  using type = Result<T>;
};
template <class V>
using AsResultT = typename AsResult<V>::type;

std::string called_on_io_thread(const char* op) {
  return std::string(op) +
         " was called on the host's I/O thread (from a callback); it would wait for itself — use the Completion "
         "overload or return from the callback first";
}

// A method without a Result reports a failure in the log and returns `neutral`.
template <class T>
T logged_or(Result<T> r, T neutral) {
  if (r) return std::move(r).value();
  util::log().error("{}", r.error().message);
  return neutral;
}

}  // namespace

struct Host::Impl {
  HostOptions options;
  asio::io_context io{1};
  asio::io_context::executor_type io_executor = io.get_executor();
  asio::executor_work_guard<asio::io_context::executor_type> work{io_executor};
  std::thread thread;
  // Blocking store calls (SQLite, config files) run here, never on the I/O thread.
  asio::thread_pool store_workers{k_store_workers};
  // The embedder's ProviderTools run here, never on the I/O thread.
  asio::thread_pool tool_workers{k_provider_tool_workers};
  // Completions and UI watchers' callbacks run here, never on the I/O thread. Destroyed
  // before `io`: a callback still queued may hold a queue whose timer is the I/O thread's.
  host::CallbackThread callbacks;
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
    t.hook = options.hook_timeout;
    t.shutdown_request = options.shutdown_request_timeout;
    t.shutdown_grace = options.shutdown_grace;
    return t;
  }

  std::shared_ptr<runtime::ProcessExtension> find(const std::string& id) const { return manager->find(id); }

  bool on_io_thread() const { return io_executor.running_in_this_thread(); }

  template <class V>
  static AsResultT<V> as_result(V v) {
    if constexpr (std::is_same_v<AsResultT<V>, V>) {
      return v;
    } else {
      return AsResultT<V>(std::move(v));
    }
  }

  // The completion handler of a blocking operation: it sets the caller's slot on the I/O
  // thread. The exception is turned into text there: no exception object (nor its
  // reference count) ever crosses to the caller's thread. Dropped without running (the I/O
  // context destroyed with it queued), it sets an error instead of leaving the caller waiting.
  template <class V>
  static auto completion_into(const char* op, std::shared_ptr<host::ResultSlot<AsResultT<V>>> slot) {
    using R = AsResultT<V>;
    auto abandoned = [op]() -> R { return Error::internal(std::string(op) + ": the host stopped before it ended"); };
    host::ResultSetter<R, decltype(abandoned)> setter(std::move(slot), abandoned);
    if constexpr (std::is_void_v<V>) {
      return [op, setter = std::move(setter)](std::exception_ptr e) mutable {
        if (e) return setter(Error::internal(std::string(op) + ": " + util::exception_text(e)));
        setter(R());
      };
    } else {
      return [op, setter = std::move(setter)](std::exception_ptr e, V v) mutable {
        if (e) return setter(Error::internal(std::string(op) + ": " + util::exception_text(e)));
        setter(as_result(std::move(v)));
      };
    }
  }

  // Runs `coro` on the I/O thread and waits for its result. An exception becomes
  // Error::internal("<op>: <what>"); on the I/O thread itself it fails at once.
  template <class V>
  AsResultT<V> run(const char* op, asio::awaitable<V> coro) {
    if (on_io_thread()) return Error::internal(called_on_io_thread(op));
    auto slot = std::make_shared<host::ResultSlot<AsResultT<V>>>();
    asio::co_spawn(io, std::move(coro), completion_into<V>(op, slot));
    return slot->take();
  }

  // run(), handing each item the operation puts in `queue` to `deliver` on this thread, in
  // order, until the operation ends; every item is delivered before the result returns.
  template <class V, class E, class Deliver>
  AsResultT<V> run_delivering(const char* op, std::shared_ptr<host::HandoffQueue<E>> queue, asio::awaitable<V> coro,
                              Deliver deliver) {
    if (on_io_thread()) return Error::internal(called_on_io_thread(op));
    auto slot = std::make_shared<host::ResultSlot<AsResultT<V>>>();
    // The queue closes after the result is set (also when the completion is dropped): the
    // caller drains it, then takes the result.
    struct CloseAfter {
      std::shared_ptr<host::HandoffQueue<E>> queue;
      explicit CloseAfter(std::shared_ptr<host::HandoffQueue<E>> q) : queue(std::move(q)) {}
      CloseAfter(CloseAfter&&) noexcept = default;
      ~CloseAfter() {
        if (queue) queue->close();
      }
    };
    asio::co_spawn(io, std::move(coro),
                   [completion = completion_into<V>(op, slot), close = CloseAfter(queue)](auto&&... args) mutable {
                     completion(std::forward<decltype(args)>(args)...);
                   });
    while (auto item = queue->pop()) {
      try {
        deliver(*item);
      } catch (...) {
        util::log().error("{}: its event callback threw: {}", op, util::exception_text(std::current_exception()));
      }
    }
    return slot->take();
  }

  // Runs `coro` on the I/O thread and hands its result to `done` on the callback thread,
  // without waiting. An exception becomes Error::internal("<op>: <what>").
  template <class T>
  void start(const char* op, asio::awaitable<Result<T>> coro, Completion<T> done) {
    asio::co_spawn(io, std::move(coro), [this, op, done = std::move(done)](std::exception_ptr e, Result<T> r) mutable {
      if (e) r = Error::internal(std::string(op) + ": " + util::exception_text(e));
      if (!done) return;
      callbacks.post(std::string("the completion of ") + op,
                     [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    });
  }

  // Runs `f`, which only reads state, on the I/O thread and waits for its result; inline
  // when already there. An exception becomes Error::internal("<op>: <what>").
  template <class F>
  auto read(const char* op, F f) -> Result<decltype(f())> {
    using T = decltype(f());
    // Caught where it is thrown: no exception object crosses threads.
    auto guarded = [op, f = std::move(f)]() mutable -> Result<T> {
      try {
        return f();
      } catch (...) {
        return Error::internal(std::string(op) + ": " + util::exception_text(std::current_exception()));
      }
    };
    if (on_io_thread()) return guarded();
    return asio::post(io, std::packaged_task<Result<T>()>(std::move(guarded))).get();
  }
};

namespace {

// What a tool call needs before it goes to the I/O thread, prepared on the caller's thread:
// the input parsed, and the folder it runs in — the caller's, else this process's current
// one, read once here instead of by each of the call's hook events and its tool.call.
struct PreparedToolCall {
  boost::json::value input;
  ToolCallContext context;
};

// An exception becomes Error::internal("<op>: <what>"), as inside an operation.
Result<PreparedToolCall> prepare_tool_call(const char* op, const std::string& name, const std::string& input_json,
                                           const ToolCallContext& context) {
  try {
    wire::JsonParser parser;
    auto input = parser.parse(input_json.empty() ? std::string_view("{}") : std::string_view(input_json));
    if (!input) {
      return Error::usage("tool '" + name + "' method 'tool.call': invalid input JSON: " + input.error().message);
    }
    PreparedToolCall call{std::move(input).value(), context};
    if (!call.context.cwd) {
      std::error_code ec;
      auto here = std::filesystem::current_path(ec);
      if (!ec) call.context.cwd = std::move(here);  // else each reader falls back as before
    }
    return call;
  } catch (...) {
    return Error::internal(std::string(op) + ": " + util::exception_text(std::current_exception()));
  }
}

asio::awaitable<Result<std::string>> call_tool_on_io(host::ExtensionManager* manager, std::string name,
                                                     PreparedToolCall call) {
  auto result = co_await manager->call_tool(std::move(name), std::move(call.input), std::move(call.context));
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

using TextQueue = host::HandoffQueue<std::string>;

// `live`, when given, receives each retained event as it is kept; the collector waits
// while it is full, so a caller behind on its events holds the extension back.
asio::awaitable<Result<CommandOutput>> invoke_on_io(std::shared_ptr<runtime::ProcessExtension> ext, std::string command,
                                                    std::vector<std::string> args, std::shared_ptr<TextQueue> live,
                                                    std::stop_token stop) {
  runtime::RetainedEventObserver observer;
  runtime::CollectorPacer pacer;
  if (live) {
    // One retained event per event taken in, and the pacer makes room before the next:
    // the queue never holds more than its capacity.
    observer = [live](const runtime::InvokeCommandEvent& e) { live->push_now(event_text(e)); };
    pacer = [live]() { return live->wait_room(); };
  }
  std::optional<host::StopWatch> watch;
  runtime::CancelWait cancelled;
  if (stop.stop_possible()) {
    watch.emplace(co_await asio::this_coro::executor, stop);
    cancelled = [&watch]() { return watch->stopped(); };
  }
  auto collected = co_await runtime::invoke_command_collected(*ext, std::move(command), std::move(args),
                                                             runtime::fresh_request_id(), {}, std::move(observer),
                                                             std::move(pacer), std::move(cancelled));
  CommandOutput out;
  if (!collected.result) {
    if (collected.result.error().cause != ErrorCause::cancelled) co_return std::move(collected.result).error();
    out.cancelled = true;  // what came before the cancellation is the answer
  } else {
    out.result_json = json_text(collected.result.value());
  }
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

// Moves each stream event to the caller's queue, waiting while it is full.
asio::awaitable<void> deliver_stream(runtime::ProviderEventSink& sink, TextQueue& live) {
  for (;;) {
    auto e = co_await sink.pop();
    if (!e) co_return;
    co_await live.push(json_text(protocol::to_json(*e)));
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
                                                  std::shared_ptr<TextQueue> live) {
  auto p = parse_json_arg(ext->id(), "provider.stream", params);
  if (!p) co_return std::move(p).error();
  runtime::ProviderEventSink sink(co_await asio::this_coro::executor);
  auto r = co_await (stream_then_close(ext, std::move(p).value(), sink) && deliver_stream(sink, *live));
  if (!r) co_return std::move(r).error();
  co_return json_text(protocol::to_json(r.value()));
}

// A model's tool output is cut at 64 KiB before it goes back into the conversation.
constexpr std::size_t k_max_provider_tool_output = 64 * 1024;

asio::awaitable<Result<std::string>> tools_loop_on_io(std::shared_ptr<runtime::ProcessExtension> ext, std::string params,
                                                      ProviderTools tools, asio::any_io_executor workers,
                                                      std::size_t max_iterations, std::uint32_t* tools_requested) {
  auto p = parse_json_arg(ext->id(), "provider.complete", params);
  if (!p) co_return std::move(p).error();
  host::EmbedderTools adapter(std::move(tools), std::move(workers));
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

asio::awaitable<Result<std::string>> emit_on_io(host::ExtensionManager* manager, std::string event_json) {
  wire::JsonParser parser;
  auto parsed = parser.parse(event_json);
  if (!parsed) co_return Error::usage("invalid hook event: " + parsed.error().message);
  auto event = protocol::parse_hook_event(parsed.value());
  if (!event) co_return std::move(event).error();
  auto result = co_await manager->emit(std::move(event).value());
  co_return json_text(protocol::to_json(result));
}

Error not_found(const std::string& id) { return Error::usage("Extension '" + id + "' not found").because(ErrorCause::not_found); }

template <class T>
asio::awaitable<Result<T>> failed_on_io(Error e) {
  co_return e;
}

// The blocking tool call: prepared on the calling thread, run on the I/O thread.
Result<std::string> call_tool_waiting(Host::Impl& impl, const char* op, std::string name, const std::string& input_json,
                                      const ToolCallContext& context, std::stop_token stop) {
  if (impl.on_io_thread()) return Error::internal(called_on_io_thread(op));
  auto call = prepare_tool_call(op, name, input_json, context);
  if (!call) return std::move(call).error();
  const std::string what = "tool '" + name + "' call";
  return impl.run(op, host::cancellable(call_tool_on_io(impl.manager.get(), std::move(name), std::move(call).value()),
                                        std::move(stop), what));
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
  m.hooks_fail_closed = options.hooks_fail_closed;
  m.limits = options.limits;
  m.retry = options.retry;
  m_impl->manager = std::make_unique<host::ExtensionManager>(m_impl->io.get_executor(),
                                                             m_impl->store_workers.get_executor(), std::move(m));
  m_impl->thread = std::thread([impl = m_impl.get()] { host::run_surviving(impl->io, "host I/O thread"); });
}

Host::~Host() {
  shutdown_all();
  m_impl->callbacks.join();  // completions of what shutdown_all() ended run first
  m_impl->work.reset();
  m_impl->io.stop();
  m_impl->thread.join();
  m_impl->tool_workers.join();
  m_impl->store_workers.join();
  m_impl->manager.reset();
}

Result<ExtensionInfo> Host::load(const std::filesystem::path& plugin_dir) {
  return m_impl->run("Host::load", m_impl->manager->load(plugin_dir));
}

Result<ExtensionInfo> Host::reload(const std::string& id) { return m_impl->run("Host::reload", m_impl->manager->reload(id)); }

DiscoveryReport Host::discover(std::function<void(const DiscoveryEvent&)> progress) {
  constexpr const char* op = "Host::discover";
  if (!progress) return logged_or(m_impl->run(op, m_impl->manager->discover({})), DiscoveryReport{});
  // The manager reports synchronously, so its events are queued without waiting; there are
  // two plus one per plugin found.
  auto live = std::make_shared<host::HandoffQueue<DiscoveryEvent>>(m_impl->io.get_executor(), k_caller_event_backlog);
  auto report = m_impl->run_delivering(op, live,
                                       m_impl->manager->discover([live](const DiscoveryEvent& e) { live->push_now(e); }),
                                       [&progress](const DiscoveryEvent& e) { progress(e); });
  return logged_or(std::move(report), DiscoveryReport{});
}

Result<std::string> Host::call_tool(const std::string& id, const std::string& tool, const std::string& input_json,
                                    const ToolCallContext& context, std::stop_token stop) {
  if (!m_impl->find(id)) return not_found(id);
  return call_tool_waiting(*m_impl, "Host::call_tool", id + ":" + tool, input_json, context, std::move(stop));
}

Result<std::string> Host::call_named_tool(const std::string& name, const std::string& input_json,
                                          const ToolCallContext& context, std::stop_token stop) {
  return call_tool_waiting(*m_impl, "Host::call_named_tool", name, input_json, context, std::move(stop));
}

Result<std::string> Host::emit_hook(const std::string& event_json, std::stop_token stop) {
  return m_impl->run("Host::emit_hook",
                     host::cancellable(emit_on_io(m_impl->manager.get(), event_json), std::move(stop), "hook event"));
}

void Host::load(const std::filesystem::path& plugin_dir, Completion<ExtensionInfo> done) {
  m_impl->start("Host::load", m_impl->manager->load(plugin_dir), std::move(done));
}

void Host::unload(const std::string& id, Completion<void> done) {
  m_impl->start("Host::unload", m_impl->manager->unload(id), std::move(done));
}

void Host::call_named_tool(const std::string& name, const std::string& input_json, const ToolCallContext& context,
                           Completion<std::string> done, std::stop_token stop) {
  constexpr const char* op = "Host::call_named_tool";
  auto call = prepare_tool_call(op, name, input_json, context);
  if (!call) return m_impl->start(op, failed_on_io<std::string>(std::move(call).error()), std::move(done));
  m_impl->start(op,
                host::cancellable(call_tool_on_io(m_impl->manager.get(), name, std::move(call).value()), std::move(stop),
                                  "tool '" + name + "' call"),
                std::move(done));
}

void Host::emit_hook(const std::string& event_json, Completion<std::string> done, std::stop_token stop) {
  m_impl->start("Host::emit_hook",
                host::cancellable(emit_on_io(m_impl->manager.get(), event_json), std::move(stop), "hook event"),
                std::move(done));
}

void Host::invoke_command(const std::string& id, const std::string& command, const std::vector<std::string>& args,
                          Completion<CommandOutput> done, std::stop_token stop) {
  constexpr const char* op = "Host::invoke_command";
  auto ext = m_impl->find(id);
  if (!ext) return m_impl->start(op, failed_on_io<CommandOutput>(not_found(id)), std::move(done));
  m_impl->start(op, invoke_on_io(std::move(ext), command, args, nullptr, std::move(stop)), std::move(done));
}

void Host::complete(const std::string& id, const std::string& params_json, Completion<std::string> done,
                    std::stop_token stop) {
  constexpr const char* op = "Host::complete";
  auto ext = m_impl->find(id);
  if (!ext) return m_impl->start(op, failed_on_io<std::string>(not_found(id)), std::move(done));
  m_impl->start(op,
                host::cancellable(complete_on_io(std::move(ext), params_json), std::move(stop),
                                  "provider.complete of extension '" + id + "'"),
                std::move(done));
}

std::optional<std::string> Host::session_start(const std::string& session_id) {
  return logged_or(m_impl->run("Host::session_start", m_impl->manager->session_start(session_id)),
                   std::optional<std::string>());
}

std::optional<std::string> Host::session_injection(const std::string& session_id) const {
  return logged_or(m_impl->read("Host::session_injection",
                                [impl = m_impl.get(), session_id] { return impl->manager->session_injection(session_id); }),
                   std::optional<std::string>());
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
  return m_impl->run("Host::session_end", m_impl->manager->session_end(session_id, std::move(transcript)));
}

std::vector<ExtensionInfo> Host::list() const {
  return logged_or(m_impl->read("Host::list",
                                [impl = m_impl.get()] {
                                  std::vector<ExtensionInfo> out;
                                  for (const auto& id : impl->manager->ids()) {
                                    if (auto info = impl->manager->info(id)) out.push_back(std::move(*info));
                                  }
                                  return out;
                                }),
                   std::vector<ExtensionInfo>());
}

std::optional<ExtensionInfo> Host::extension_info(const std::string& id) const {
  return logged_or(m_impl->read("Host::extension_info", [impl = m_impl.get(), id] { return impl->manager->info(id); }),
                   std::optional<ExtensionInfo>());
}

std::vector<ToolInfo> Host::tools() const {
  return logged_or(m_impl->read("Host::tools",
                                [impl = m_impl.get()] {
                                  std::vector<ToolInfo> out;
                                  for (const auto& t : impl->manager->tools().tools()) {
                                    out.push_back(ToolInfo{t.tool_name, t.runtime_name, t.api_name, t.description,
                                                           wire::to_json(t.input_schema),
                                                           wire::to_json(t.api_input_schema), t.idempotent});
                                  }
                                  return out;
                                }),
                   std::vector<ToolInfo>());
}

Result<ExtensionStats> Host::stats(const std::string& id) const {
  auto s = m_impl->read("Host::stats", [impl = m_impl.get(), id] { return impl->manager->stats(id); });
  if (!s) return std::move(s).error();
  if (!*s) return not_found(id);
  return std::move(**s);
}

Result<std::string> Host::config_report(const std::string& id) const {
  // On the calling thread, not the I/O thread: resolving reads the config files again.
  std::optional<host::ConfigDiagnostics> d;
  try {
    d = m_impl->manager->config_diagnostics(id);
  } catch (...) {
    return Error::internal("Host::config_report: " + util::exception_text(std::current_exception()));
  }
  if (!d) return not_found(id);
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

Result<CommandOutput> Host::invoke_command(const std::string& id, const std::string& command,
                                           const std::vector<std::string>& args, std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run("Host::invoke_command", invoke_on_io(std::move(ext), command, args, nullptr, std::move(stop)));
}

Result<CommandOutput> Host::invoke_command(const std::string& id, const std::string& command,
                                           const std::vector<std::string>& args, EventCallback on_event,
                                           std::stop_token stop) {
  constexpr const char* op = "Host::invoke_command";
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  if (!on_event) return m_impl->run(op, invoke_on_io(std::move(ext), command, args, nullptr, std::move(stop)));
  auto live = std::make_shared<TextQueue>(m_impl->io.get_executor(), k_caller_event_backlog);
  return m_impl->run_delivering(op, live, invoke_on_io(std::move(ext), command, args, live, std::move(stop)),
                                [&on_event](const std::string& e) { on_event(e); });
}

Result<std::string> Host::complete(const std::string& id, const std::string& params_json, std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run("Host::complete", host::cancellable(complete_on_io(std::move(ext), params_json), std::move(stop),
                                                         "provider.complete of extension '" + id + "'"));
}

Result<std::string> Host::stream(const std::string& id, const std::string& params_json, EventCallback on_event,
                                 std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  auto live = std::make_shared<TextQueue>(m_impl->io.get_executor(), k_caller_event_backlog);
  return m_impl->run_delivering("Host::stream", live,
                                host::cancellable(stream_on_io(std::move(ext), params_json, live), std::move(stop),
                                                  "provider.stream of extension '" + id + "'"),
                                [&on_event](const std::string& e) {
                                  if (on_event) on_event(e);
                                });
}

Result<std::string> Host::complete_with_tools(const std::string& id, const std::string& params_json, ProviderTools tools,
                                              std::size_t max_iterations, std::uint32_t* tools_requested,
                                              std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run("Host::complete_with_tools",
                     host::cancellable(tools_loop_on_io(std::move(ext), params_json, std::move(tools),
                                                        m_impl->tool_workers.get_executor(), max_iterations,
                                                        tools_requested),
                                       std::move(stop), "provider turn of extension '" + id + "'"));
}

Result<std::string> Host::info(const std::string& id, std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run("Host::info",
                     host::cancellable(info_on_io(std::move(ext)), std::move(stop), "info.get of extension '" + id + "'"));
}

Result<std::string> Host::settings_editor_open(const std::string& id, const std::string& category,
                                               const std::string& field, std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run("Host::settings_editor_open",
                     host::cancellable(json_result_on_io(ext->settings_editor_open(category, field)), std::move(stop),
                                       "settings.editor.open of extension '" + id + "'"));
}

Result<std::string> Host::settings_editor_key(const std::string& id, const std::string& category, const std::string& field,
                                              const std::string& key, std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run("Host::settings_editor_key",
                     host::cancellable(json_result_on_io(ext->settings_editor_key(category, field, key)), std::move(stop),
                                       "settings.editor.key of extension '" + id + "'"));
}

Result<std::string> Host::settings_editor_commit(const std::string& id, const std::string& category,
                                                 const std::string& field, const std::string& value_json,
                                                 std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  auto value = parse_json_arg(id, "settings.editor.commit", value_json);
  if (!value) return std::move(value).error();
  return m_impl->run("Host::settings_editor_commit",
                     host::cancellable(json_result_on_io(ext->settings_editor_commit(category, field, std::move(value).value())),
                                       std::move(stop), "settings.editor.commit of extension '" + id + "'"));
}

Result<std::string> Host::sidecar_spawn_args(const std::string& id, std::stop_token stop) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  return m_impl->run("Host::sidecar_spawn_args", host::cancellable(sidecar_on_io(std::move(ext)), std::move(stop),
                                                                   "sidecar.spawn_args of extension '" + id + "'"));
}

Result<void> Host::watch_ui_events(const std::string& id, EventCallback on_event) {
  auto ext = m_impl->find(id);
  if (!ext) return not_found(id);
  // Subscribed on the I/O thread before this returns: no later notification is missed.
  // Starting a watch never waits, so on the I/O thread it starts inline.
  auto start = [impl = m_impl.get(), ext = std::move(ext), on_event = std::move(on_event)]() mutable {
    host::start_ui_watcher(ext, impl->callbacks, std::move(on_event));
  };
  try {
    if (m_impl->on_io_thread()) {
      start();
    } else {
      asio::post(m_impl->io, std::packaged_task<void()>(std::move(start))).get();
    }
  } catch (...) {
    return Error::internal("Host::watch_ui_events: " + util::exception_text(std::current_exception()));
  }
  return {};
}

Result<void> Host::unload(const std::string& id) { return m_impl->run("Host::unload", m_impl->manager->unload(id)); }

void Host::shutdown_all() {
  auto r = m_impl->run("Host::shutdown_all", m_impl->manager->shutdown_all());
  if (!r) util::log().error("{}", r.error().message);
}

void Host::kill_all() {
  try {
    if (m_impl->on_io_thread()) return m_impl->manager->kill_all();
    asio::post(m_impl->io, std::packaged_task<void()>([impl = m_impl.get()] { impl->manager->kill_all(); })).get();
  } catch (...) {
    util::log().error("Host::kill_all: {}", util::exception_text(std::current_exception()));
  }
}

std::optional<Lifecycle> Host::lifecycle(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  return ext->lifecycle_snapshot();
}

std::optional<Health> Host::health(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  return m_impl->manager->health_of(id, *ext);
}

std::string Host::stderr_tail(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return {};
  return logged_or(m_impl->read("Host::stderr_tail", [ext] { return ext->stderr_tail(); }), std::string());
}

std::optional<int> Host::child_pid(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  return logged_or(m_impl->read("Host::child_pid",
                                [ext]() -> std::optional<int> {
                                  auto c = ext->child();
                                  if (!c) return std::nullopt;
                                  return static_cast<int>(c->pid());
                                }),
                   std::optional<int>());
}

}  // namespace exthost
