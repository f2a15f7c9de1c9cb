#include "runtime/process_extension.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "process/environment.hpp"
#include "protocol/tool_call.hpp"
#include "runtime/notification_forwarding.hpp"
#include "util/log.hpp"
#include "wire/message.hpp"

namespace exthost::runtime {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

// Texts that mean the host itself ended the transport: never a reason to restart.
bool ended_by_host(const std::string& message) {
  return message == "transport closed: extension shutdown" || message == "transport closed: extension cancelled";
}

}  // namespace

ProcessExtension::State::~State() {
  if (connection) connection->stop();
  if (lifecycle) lifecycle->invalidate();
  if (child) child->kill_group();
}

ProcessExtension::ProcessExtension(asio::any_io_executor ex, ProcessSpec spec, Timeouts timeouts, RestartPolicy policy)
    : m_executor(ex),
      m_spec(std::move(spec)),
      m_timeouts(timeouts),
      m_policy(policy),
      m_inbox(std::make_shared<rpc::Inbox>(ex, m_spec.id)),
      m_call_lock(ex),
      m_initialize_config(boost::json::object()),
      m_timer_anchor(ex) {
  if (m_spec.environment.empty()) m_spec.environment = process::allowed_environment();
}

ProcessExtension::~ProcessExtension() { m_timer_anchor.cancel(); }

void ProcessExtension::arm_timer_anchor(std::weak_ptr<ProcessExtension> weak) {
  auto self = weak.lock();
  if (!self || self->m_stopped) return;
  self->m_timer_anchor.expires_after(k_timer_anchor_period);
  self->m_timer_anchor.async_wait([weak](const boost::system::error_code& ec) {
    if (!ec) arm_timer_anchor(weak);
  });
}

asio::awaitable<Result<std::shared_ptr<ProcessExtension>>> ProcessExtension::spawn(asio::any_io_executor ex,
                                                                                    ProcessSpec spec, Timeouts timeouts,
                                                                                    RestartPolicy policy) {
  std::shared_ptr<ProcessExtension> ext(new ProcessExtension(ex, std::move(spec), timeouts, policy));
  arm_timer_anchor(ext);
  auto state = ext->spawn_state();
  if (!state) co_return std::move(state).error();
  ext->m_state = std::move(state).value();
  ext->m_has_state = true;
  co_return ext;
}

Result<std::unique_ptr<ProcessExtension::State>> ProcessExtension::spawn_state() {
  process::SpawnSpec spawn;
  spawn.extension_id = m_spec.id;
  spawn.program = m_spec.command;
  spawn.args = m_spec.args;
  spawn.cwd = m_spec.cwd;
  spawn.environment = m_spec.environment;
  spawn.limits = m_spec.limits;
  auto child = process::Child::spawn(m_executor, spawn);
  if (!child) return std::move(child).error();
  ++m_spawns;
  auto state = std::make_unique<State>();
  state->child = std::move(child).value();
  auto lifecycle = m_inbox->install_lifecycle(state->child->exit_probe());
  if (!lifecycle) return std::move(lifecycle).error();  // State's destructor kills the child
  state->lifecycle = std::move(lifecycle).value();
  state->connection = rpc::Connection::start(m_inbox, state->child, state->lifecycle);
  // A child's exit is seen without an RPC: its own generation is invalidated at once, and
  // its connection ends even if descendants still hold its stdout.
  std::weak_ptr<rpc::Lifecycle> weak = state->lifecycle;
  std::weak_ptr<rpc::Connection> weak_connection = state->connection;
  state->child->on_exit([weak, weak_connection] {
    if (auto l = weak.lock()) l->invalidate();
    if (auto c = weak_connection.lock()) c->child_exited();
  });
  return state;
}

void ProcessExtension::remember_stderr() {
  if (m_state && m_state->child) {
    m_last_stderr_tail = m_state->child->stderr_snapshot().tail;
    if (m_state->child->reaped()) m_last_exit = m_state->child->exit_description();
  }
}

std::string ProcessExtension::exit_description() const {
  if (m_state && m_state->child && m_state->child->reaped()) return m_state->child->exit_description();
  return m_last_exit;
}

std::string ProcessExtension::stderr_tail() const {
  if (m_state && m_state->child) return m_state->child->stderr_snapshot().tail;
  return m_last_stderr_tail;
}

void ProcessExtension::set_inbound_handler(std::shared_ptr<rpc::InboundHandler> handler) {
  m_inbox->set_inbound_handler(std::move(handler));
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_once_locked(State& state, std::string_view method,
                                                                               const boost::json::value& params,
                                                                               std::uint64_t id) {
  // Copied before the first suspension: shutdown may tear `state` down while we wait.
  std::shared_ptr<rpc::Connection> connection = state.connection;
  co_return co_await connection->call(method, params, id);
}

asio::awaitable<Result<protocol::InitializeResult>> ProcessExtension::initialize(
    std::optional<std::filesystem::path> plugin_root, boost::json::value config) {
  auto self = shared_from_this();
  m_initialize_config = std::move(config);
  m_plugin_root = plugin_root ? plugin_root : m_spec.cwd;
  auto guard = co_await m_call_lock.lock();
  if (!m_state) {
    auto state = spawn_state();
    if (!state) co_return std::move(state).error();
    m_state = std::move(state).value();
    m_has_state = true;
  }
  State& state = *m_state;
  // Kept across the wait: a stop (shutdown, force_shutdown) may drop the state meanwhile.
  const std::shared_ptr<rpc::Lifecycle> lifecycle = state.lifecycle;
  std::optional<std::string> root;
  if (m_plugin_root) root = m_plugin_root->string();
  auto params = protocol::initialize_params(m_spec.id, root, m_initialize_config);
  const std::uint64_t id = next_id();
  asio::steady_timer deadline(m_executor, m_timeouts.initialize);
  auto raced = co_await (call_once_locked(state, "initialize", params, id) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    lifecycle->invalidate();
    co_return Error::timeout("Extension '" + m_spec.id + "' initialize timed out after " +
                             duration_text(m_timeouts.initialize));
  }
  auto reply = std::get<0>(std::move(raced));
  if (!reply) {
    lifecycle->invalidate();
    co_return std::move(reply).error();
  }
  auto parsed = protocol::parse_initialize_result(m_spec.id, reply.value());
  if (!parsed) {
    lifecycle->invalidate();
    co_return std::move(parsed).error();
  }
  // Published while still holding the call lock on this same child (SPEC §6.1).
  lifecycle->mark_initialized();
  m_inbox->set_cancellation(parsed->cancellation);
  co_return parsed;
}

asio::awaitable<Result<void>> ProcessExtension::initialize_locked() {
  State& state = *m_state;
  // Kept across the wait: a stop (shutdown, force_shutdown) may drop the state meanwhile.
  const std::shared_ptr<rpc::Lifecycle> lifecycle = state.lifecycle;
  std::optional<std::string> root;
  if (m_plugin_root) root = m_plugin_root->string();
  auto params = protocol::initialize_params(m_spec.id, root, m_initialize_config);
  const std::uint64_t id = next_id();
  asio::steady_timer deadline(m_executor, m_timeouts.initialize);
  auto raced = co_await (call_once_locked(state, "initialize", params, id) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    lifecycle->invalidate();
    co_return Error::timeout("Extension '" + m_spec.id + "' initialize timed out after " +
                             duration_text(m_timeouts.initialize));
  }
  auto reply = std::get<0>(std::move(raced));
  if (!reply) {
    lifecycle->invalidate();
    co_return std::move(reply).error();
  }
  auto parsed = protocol::parse_initialize_result(m_spec.id, reply.value());
  if (!parsed) {
    lifecycle->invalidate();
    co_return std::move(parsed).error();
  }
  lifecycle->mark_initialized();
  m_inbox->set_cancellation(parsed->cancellation);
  co_return Result<void>();
}

asio::awaitable<Result<void>> ProcessExtension::restart_locked() {
  if (m_stopped) {
    co_return Error::extension("Extension '" + m_spec.id + "' was stopped (unloaded or reloaded); not respawning it");
  }
  m_inbox->invalidate_lifecycle();
  const std::size_t attempted = ++m_restart_count;
  ++m_total_restarts;
  if (attempted > m_policy.max_attempts) {
    remember_stderr();
    m_state.reset();
    m_has_state = false;
    co_return Error::extension("Extension '" + m_spec.id + "' exceeded restart limit (" +
                               std::to_string(m_policy.max_attempts) + ")");
  }
  if (m_state) {
    remember_stderr();
    auto old = std::move(m_state);
    m_has_state = false;
    old->connection->stop();
    old->lifecycle->invalidate();
    auto child = old->child;
    old.reset();  // kills the group
    co_await child->wait_reaped(process::Child::k_reap_after_kill_bound);
  }
  m_inbox->fail_all_pending("transport closed: process restarting");
  const auto delay = m_policy.delay_for_attempt(static_cast<std::uint32_t>(attempted)).value_or(std::chrono::milliseconds(0));
  util::log().warn("extension '{}': Restarting extension process after transport failure (attempt={}, max_attempts={}, delay_ms={}){}",
                   m_spec.id, attempted, m_policy.max_attempts, delay.count(),
                   m_last_stderr_tail.empty() ? std::string() : "; stderr tail: " + m_last_stderr_tail);
  if (delay.count() > 0) {
    asio::steady_timer sleep(m_executor, delay);
    co_await sleep.async_wait(asio::use_awaitable);
  }
  auto state = spawn_state();
  if (!state) co_return std::move(state).error();
  m_state = std::move(state).value();
  m_has_state = true;
  co_return co_await initialize_locked();
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call(std::string method, boost::json::value params) {
  auto self = shared_from_this();
  const auto limit = m_timeouts.for_method(method);
  asio::steady_timer deadline(m_executor, limit);
  auto raced = co_await (call_inner(method, std::move(params)) || deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    m_outcomes.timeout.fetch_add(1, std::memory_order_relaxed);
    co_return Error::timeout("Extension '" + m_spec.id + "' method '" + method + "' timed out after " +
                             duration_text(limit));
  }
  co_return std::get<0>(std::move(raced));
}

namespace {
// Counts how a request ended; a coroutine destroyed before it ends was abandoned.
struct OutcomeGuard {
  CallOutcomes& outcomes;
  bool done = false;
  ~OutcomeGuard() {
    if (!done) outcomes.abandoned.fetch_add(1, std::memory_order_relaxed);
  }
  const Result<boost::json::value>& record(const Result<boost::json::value>& r) {
    done = true;
    if (r) {
      outcomes.ok.fetch_add(1, std::memory_order_relaxed);
    } else if (wire::is_application_error(r.error().message)) {
      outcomes.application_error.fetch_add(1, std::memory_order_relaxed);
    } else {
      outcomes.transport_error.fetch_add(1, std::memory_order_relaxed);
    }
    return r;
  }
};
}  // namespace

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_inner(std::string method, boost::json::value params) {
  OutcomeGuard outcome{m_outcomes};
  auto result = co_await call_inner_unobserved(std::move(method), std::move(params));
  outcome.record(result);
  co_return result;
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_inner_unobserved(std::string method,
                                                                                    boost::json::value params) {
  auto guard = co_await m_call_lock.lock();
  const std::uint64_t id = next_id();
  if (!m_state) {
    auto restarted = co_await restart_locked();
    if (!restarted) co_return std::move(restarted).error();
  }
  auto first = co_await call_once_locked(*m_state, method, params, id);
  if (first) {
    m_restart_count = 0;  // the process served a real call: it has recovered
    co_return first;
  }
  const std::string first_error = first.error().message;
  if (wire::is_application_error(first_error)) {
    m_restart_count = 0;  // it answered: a live transport, nothing to restart
    co_return first;
  }
  if (m_stopped || ended_by_host(first_error)) co_return first;
  // An EOF is how a child that ended looks; a parse error leaves it running (no wait).
  if (m_spec.limits.any() && m_state && first_error.rfind("transport closed: EOF", 0) == 0) {
    // Under limits, an ended child is reported rather than retried: the retry would meet
    // the same limit. The next call restarts it.
    auto child = m_state->child;
    if (co_await child->wait_reaped(k_exit_status_wait)) {
      remember_stderr();
      m_inbox->invalidate_lifecycle();
      m_state.reset();
      m_has_state = false;
      std::string report = first_error + "; extension '" + m_spec.id + "' " + m_last_exit;
      if (!m_last_stderr_tail.empty()) report += "\nstderr tail of extension '" + m_spec.id + "':\n" + m_last_stderr_tail;
      co_return Error{first.error().kind, std::move(report)};
    }
  }
  auto restarted = co_await restart_locked();
  if (!restarted) co_return std::move(restarted).error();
  const std::uint64_t retry_id = next_id();
  auto retry = co_await call_once_locked(*m_state, method, params, retry_id);
  if (retry) {
    m_restart_count = 0;
    co_return retry;
  }
  co_return Error{retry.error().kind, first_error + "; retry after restart failed: " + retry.error().message};
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_no_spawn(std::string method,
                                                                            boost::json::value params) {
  auto guard = co_await m_call_lock.lock();
  const std::uint64_t id = next_id();
  if (!m_state) {
    co_return Error::extension("Extension '" + m_spec.id + "' process is not running; '" + method +
                               "' refused (no respawn)");
  }
  co_return co_await call_once_locked(*m_state, method, params, id);
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::leased_call(boost::json::value params) {
  auto guard = co_await m_call_lock.lock();
  const std::uint64_t id = next_id();
  if (!m_state) {
    co_return Error::extension("Extension '" + m_spec.id + "' process is not running; leased call refused (no respawn)");
  }
  // Out of the slot while waiting: a concurrent force_shutdown() sees no child to keep.
  std::unique_ptr<State> state = std::move(m_state);
  m_has_state = false;
  auto result = co_await call_once_locked(*state, "tool.call", params, id);
  if (!m_inbox->closed() && !m_state) {
    m_state = std::move(state);
    m_has_state = true;
  } else {
    m_last_stderr_tail = state->child->stderr_snapshot().tail;
    state.reset();  // the transport ended meanwhile: stop the reader, kill the group
  }
  co_return result;
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_tool_once_no_spawn(
    std::string name, boost::json::value input, std::optional<std::string> session_id,
    std::optional<std::filesystem::path> cwd, std::optional<protocol::Author> caller) {
  auto self = shared_from_this();
  auto params = protocol::tool_call_params(name, std::move(input), session_id, cwd, caller,
                                           protocol::hook_session_id_enabled());
  asio::steady_timer deadline(m_executor, m_timeouts.tool_call);
  auto raced = co_await (leased_call(std::move(params)) || deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    co_return Error::timeout("Extension '" + m_spec.id + "' leased tool.call timed out after " +
                             duration_text(m_timeouts.tool_call));
  }
  co_return std::get<0>(std::move(raced));
}

asio::awaitable<protocol::HookResult> ProcessExtension::hook_outcome(Result<boost::json::value> reply) {
  if (!reply) {
    if (ended_by_host(reply.error().message)) {  // cut off by the host's own stop: not the extension's failure
      util::log().debug("extension '{}': hook handler stopped with the extension — continuing", m_spec.id);
    } else {
      util::log().warn("extension '{}': Extension hook handler failed — continuing: {}", m_spec.id, reply.error().message);
    }
    co_return protocol::hook_result::Continue{};
  }
  if (!protocol::decode_hook_result(reply.value())) {
    util::log().warn("extension '{}': Extension hook handler returned invalid result", m_spec.id);
  }
  co_return protocol::hook_result_from_reply(reply.value());
}

asio::awaitable<protocol::HookResult> ProcessExtension::handle(const protocol::HookEvent& event) {
  auto reply = co_await call("hook.handle", event.to_json());
  co_return co_await hook_outcome(std::move(reply));
}

asio::awaitable<protocol::HookResult> ProcessExtension::handle_no_spawn(const protocol::HookEvent& event) {
  asio::steady_timer deadline(m_executor, m_timeouts.hook);
  auto raced = co_await (call_no_spawn("hook.handle", event.to_json()) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    util::log().warn("extension '{}': Extension hook handler timed out — continuing", m_spec.id);
    co_return protocol::hook_result::Continue{};
  }
  co_return co_await hook_outcome(std::get<0>(std::move(raced)));
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_tool_for(std::string name, boost::json::value input,
                                                                            std::optional<std::string> session_id,
                                                                            std::optional<std::filesystem::path> cwd) {
  co_return co_await call_tool_as(std::move(name), std::move(input), std::move(session_id), std::move(cwd), std::nullopt);
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_tool_as(std::string name, boost::json::value input,
                                                                           std::optional<std::string> session_id,
                                                                           std::optional<std::filesystem::path> cwd,
                                                                           std::optional<protocol::Author> caller) {
  auto params = protocol::tool_call_params(name, std::move(input), session_id, cwd, caller,
                                           protocol::hook_session_id_enabled());
  co_return co_await call("tool.call", std::move(params));
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_named_timeout(std::string method,
                                                                                 boost::json::value params) {
  auto r = co_await call(method, std::move(params));
  if (!r && r.error().kind == ErrorKind::timeout) {
    co_return Error::timeout("Extension '" + m_spec.id + "' " + method + " timed out");
  }
  co_return r;
}

asio::awaitable<Result<protocol::ProviderCompleteResult>> ProcessExtension::provider_complete(boost::json::value params) {
  auto self = shared_from_this();
  auto reply = co_await call_named_timeout("provider.complete", std::move(params));
  if (!reply) co_return std::move(reply).error();
  auto result = protocol::parse_provider_result(m_spec.id, "provider.complete", reply.value());
  if (!result) co_return result;
  if (result->content.empty()) {
    co_return Error::extension("Extension '" + m_spec.id + "' provider.complete returned empty content");
  }
  co_return result;
}

// The call of a streamed method: when its answer is in, the subscription ends, so the
// forwarder drains what is buffered and stops.
asio::awaitable<Result<boost::json::value>> ProcessExtension::call_then_unsubscribe(std::string method,
                                                                                   boost::json::value params,
                                                                                   rpc::Subscription& subscription) {
  auto r = co_await call(std::move(method), std::move(params));
  subscription.unsubscribe();
  co_return r;
}

asio::awaitable<void> ProcessExtension::forward_stream(rpc::Subscription& subscription, ProviderEventSink& sink) {
  bool sink_open = true;
  for (;;) {
    auto frame = co_await subscription.queue().pop();
    if (!frame) break;
    co_await forward_provider_stream_frame(m_spec.id, sink, sink_open, std::move(*frame));
  }
}

asio::awaitable<Result<protocol::ProviderCompleteResult>> ProcessExtension::provider_stream(boost::json::value params,
                                                                                            ProviderEventSink& sink) {
  auto self = shared_from_this();
  auto subscription = m_inbox->subscribe();  // before the request: no early event is missed
  asio::steady_timer deadline(m_executor, m_timeouts.provider_stream);
  auto raced = co_await ((call_then_unsubscribe("provider.stream", std::move(params), subscription) &&
                          forward_stream(subscription, sink)) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    m_outcomes.timeout.fetch_add(1, std::memory_order_relaxed);
    co_return Error::timeout("Extension '" + m_spec.id + "' provider.stream timed out");
  }
  auto reply = std::get<0>(std::move(raced));
  if (!reply) {
    if (reply.error().kind == ErrorKind::timeout) {
      co_return Error::timeout("Extension '" + m_spec.id + "' provider.stream timed out");
    }
    co_return std::move(reply).error();
  }
  // Empty content is fine here: the text may have come entirely as deltas.
  co_return protocol::parse_provider_result(m_spec.id, "provider.stream", reply.value());
}

asio::awaitable<bool> ProcessExtension::forward_invoke(rpc::Subscription& subscription, std::string request_id,
                                                       InvokeEventChannel& channel) {
  bool sink_open = true;
  bool saw_done = false;
  for (;;) {
    auto frame = co_await subscription.queue().pop();
    if (!frame) break;
    if (co_await forward_invoke_command_frame(m_spec.id, request_id, channel, sink_open, std::move(*frame))) {
      saw_done = true;
    }
  }
  co_return saw_done;
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::invoke_command(std::string command,
                                                                             std::vector<std::string> args,
                                                                             std::string request_id,
                                                                             InvokeEventChannel& channel) {
  auto self = shared_from_this();
  // However this ends (answer, error, deadline, cancellation), the collector's stream ends.
  struct CloseOnExit {
    InvokeEventChannel& channel;
    ~CloseOnExit() { channel.close(); }
  } close_on_exit{channel};
  auto subscription = m_inbox->subscribe();
  boost::json::object params;
  params["command"] = command;
  params["args"] = boost::json::array(args.begin(), args.end());
  params["request_id"] = request_id;
  asio::steady_timer deadline(m_executor, m_timeouts.command_invoke);
  auto raced = co_await ((call_then_unsubscribe("command.invoke", std::move(params), subscription) &&
                          forward_invoke(subscription, request_id, channel)) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    m_outcomes.timeout.fetch_add(1, std::memory_order_relaxed);
    co_return Error::timeout("Extension '" + m_spec.id + "' command.invoke timed out");
  }
  auto both = std::get<0>(std::move(raced));
  auto& reply = std::get<0>(both);
  if (!reply && reply.error().kind == ErrorKind::timeout) {
    co_return Error::timeout("Extension '" + m_spec.id + "' command.invoke timed out");
  }
  co_return std::move(reply);
}

asio::awaitable<Result<protocol::PluginInfo>> ProcessExtension::get_info() {
  auto self = shared_from_this();
  auto reply = co_await call_named_timeout("info.get", nullptr);
  if (!reply) co_return std::move(reply).error();
  co_return protocol::parse_plugin_info(m_spec.id, reply.value());
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::settings_editor_open(std::string category,
                                                                                   std::string field) {
  auto self = shared_from_this();
  boost::json::object params;
  params["category"] = category;
  params["field"] = field;
  co_return co_await call_named_timeout("settings.editor.open", std::move(params));
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::settings_editor_key(std::string category,
                                                                                  std::string field, std::string key) {
  auto self = shared_from_this();
  boost::json::object params;  // key first, then category and field (reference order)
  params["key"] = key;
  params["category"] = category;
  params["field"] = field;
  co_return co_await call_named_timeout("settings.editor.key", std::move(params));
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::settings_editor_commit(std::string category,
                                                                                     std::string field,
                                                                                     boost::json::value value) {
  auto self = shared_from_this();
  boost::json::object params;
  params["category"] = category;
  params["field"] = field;
  params["value"] = std::move(value);
  co_return co_await call_named_timeout("settings.editor.commit", std::move(params));
}

asio::awaitable<Result<protocol::SidecarSpawnArgs>> ProcessExtension::sidecar_spawn_args() {
  auto self = shared_from_this();
  auto reply = co_await call_named_timeout("sidecar.spawn_args", nullptr);
  if (!reply) co_return std::move(reply).error();
  co_return protocol::parse_sidecar_spawn_args(m_spec.id, reply.value());
}

asio::awaitable<void> ProcessExtension::shutdown() {
  auto self = shared_from_this();
  m_stopped = true;
  m_inbox->invalidate_lifecycle();  // before waiting for the call lock (SPEC §6.9)
  // The polite rung: a shutdown request, if the call lock frees up within its deadline.
  asio::steady_timer deadline(m_executor, m_timeouts.shutdown_request);
  auto locked = co_await (m_call_lock.lock() || deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (locked.index() == 0 && m_state) {
    auto guard = std::get<0>(std::move(locked));
    deadline.expires_after(m_timeouts.shutdown_request);
    const std::uint64_t id = next_id();
    boost::json::value null_params;
    co_await (call_once_locked(*m_state, "shutdown", null_params, id) ||
              deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  }
  if (m_state) {
    remember_stderr();
    auto state = std::move(m_state);
    m_has_state = false;
    state->connection->stop();  // closes stdin: a well-behaved child exits now
    state->lifecycle->invalidate();
    auto child = state->child;
    m_stopping = child;  // force_shutdown() may cut the ladder short
    co_await child->wait_reaped(m_timeouts.shutdown_grace);
    co_await child->stop(m_timeouts.shutdown_grace);  // SIGTERM, grace, SIGKILL: to the group
    m_stopping.reset();
    remember_stderr();
  }
  m_inbox->drop_subscribers();
  m_inbox->fail_all_pending("transport closed: extension shutdown");
}

void ProcessExtension::force_shutdown() {
  m_inbox->invalidate_lifecycle();
  if (m_stopping) m_stopping->kill_group();  // a stop ladder still waiting: end it now
  if (m_state) {
    remember_stderr();
    m_state.reset();  // stops the reader, kills the group; the reaper collects the child
    m_has_state = false;
  }
  m_inbox->drop_subscribers();
  m_inbox->fail_all_pending("transport closed: extension cancelled");
}

std::optional<Lifecycle> ProcessExtension::lifecycle_snapshot() const {
  return m_inbox->snapshot(m_total_restarts.load() > 0);
}

Health ProcessExtension::health() const {
  if (m_restart_count.load() >= m_policy.max_attempts) return Health::failed;
  if (m_total_restarts.load() > 0) return m_has_state.load() ? Health::degraded : Health::restarting;
  return Health::running;
}

}  // namespace exthost::runtime
