#include "runtime/process_extension.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>

#include "process/environment.hpp"
#include "protocol/tool_call.hpp"
#include "runtime/notification_forwarding.hpp"
#include "util/exception_text.hpp"
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

ProcessExtension::Instance::~Instance() { tear_down(); }

void ProcessExtension::Instance::tear_down() {
  if (connection) connection->stop();
  if (lifecycle) lifecycle->invalidate();
  if (child) child->kill_group();
}

ProcessExtension::ProcessExtension(asio::any_io_executor ex, ProcessSpec spec, Timeouts timeouts, RestartPolicy policy)
    : m_executor(ex),
      m_spec(std::move(spec)),
      m_timeouts(timeouts),
      m_policy(policy),
      m_machine(policy, m_spec.id),
      m_inbox(std::make_shared<rpc::Inbox>(ex, m_spec.id)),
      m_scheduler(ex),
      m_changed(ex),
      m_backoff(ex),
      m_initialize_config(boost::json::object()),
      m_timer_anchor(ex) {
  if (m_spec.environment.empty()) m_spec.environment = process::allowed_environment();
}

ProcessExtension::~ProcessExtension() { m_timer_anchor.cancel(); }

void ProcessExtension::arm_timer_anchor(std::weak_ptr<ProcessExtension> weak) {
  auto self = weak.lock();
  if (!self) return;
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
  std::weak_ptr<ProcessExtension> weak = ext;
  ext->m_inbox->set_progress_observer([weak](std::uint64_t id) {
    auto self = weak.lock();
    if (!self) return;
    if (auto it = self->m_activity.find(id); it != self->m_activity.end()) {
      if (auto activity = it->second.lock()) activity->last = std::chrono::steady_clock::now();
    }
  });
  auto instance = ext->spawn_instance(ext->m_machine.epoch());
  if (!instance) {
    ext->perform(ext->m_machine.handle({LifeInput::Kind::spawn_failed, ext->m_machine.epoch()}));
    co_return std::move(instance).error();
  }
  ext->m_current = std::move(instance).value();
  ext->m_has_state = true;
  ext->perform(ext->m_machine.handle({LifeInput::Kind::spawned, ext->m_machine.epoch()}));
  co_return ext;
}

Result<std::shared_ptr<ProcessExtension::Instance>> ProcessExtension::spawn_instance(std::uint64_t epoch) {
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
  auto instance = std::make_shared<Instance>();
  instance->epoch = epoch;
  instance->child = std::move(child).value();
  auto lifecycle = m_inbox->install_lifecycle(instance->child->exit_probe());
  if (!lifecycle) return std::move(lifecycle).error();  // the Instance's destructor kills the child
  instance->lifecycle = std::move(lifecycle).value();
  instance->connection = rpc::Connection::start(m_inbox, instance->child, instance->lifecycle);
  // A child's exit is seen without an RPC: its own generation is invalidated at once, and
  // its connection ends even if descendants still hold its stdout.
  std::weak_ptr<rpc::Lifecycle> weak = instance->lifecycle;
  std::weak_ptr<rpc::Connection> weak_connection = instance->connection;
  instance->child->on_exit([weak, weak_connection] {
    if (auto l = weak.lock()) l->invalidate();
    if (auto c = weak_connection.lock()) c->child_exited();
  });
  return instance;
}

void ProcessExtension::perform(std::vector<LifeAction> actions) {
  using A = LifeAction::Kind;
  for (auto& action : actions) {
    switch (action.kind) {
      case A::spawn: {
        auto instance = spawn_instance(action.epoch);
        if (!instance) {
          m_last_restart_error = std::move(instance).error();
          perform(m_machine.handle({LifeInput::Kind::spawn_failed, action.epoch}));
          break;
        }
        m_current = std::move(instance).value();
        m_has_state = true;
        perform(m_machine.handle({LifeInput::Kind::spawned, action.epoch}));
        break;
      }
      case A::send_initialize:
        asio::co_spawn(m_executor, initialize_restarted(shared_from_this(), action.epoch),
                       report_failure("restart initialize"));
        break;
      case A::tear_down:
        if (m_current && m_current->epoch == action.epoch) {
          remember_stderr(*m_current->child);
          m_last_child = m_current->child;
          auto instance = std::move(m_current);
          m_has_state = false;
          instance->tear_down();
        }
        m_inbox->invalidate_lifecycle();
        break;
      case A::fail_pending:
        m_inbox->fail_all_pending(action.reason,
                                  ended_by_host(action.reason) ? ErrorCause::stopped : ErrorCause::transport);
        break;
      case A::start_backoff:
        asio::co_spawn(m_executor, run_restart(shared_from_this(), action.delay, action.epoch),
                       report_failure("restart"));
        break;
      case A::cancel_backoff:
        m_backoff.cancel();
        break;
      case A::invalidate:
        m_inbox->invalidate_lifecycle();
        break;
      case A::wake:
        m_changed.notify();
        break;
    }
  }
  publish_health();
}

std::function<void(std::exception_ptr)> ProcessExtension::report_failure(const char* what) {
  std::weak_ptr<ProcessExtension> weak = weak_from_this();
  return [weak, what](std::exception_ptr e) {
    if (!e) return;
    auto self = weak.lock();
    const std::string id = self ? self->m_spec.id : std::string("?");
    util::log().error("extension '{}': {} failed inside the host: {}", id, what, util::exception_text(e));
    if (self) self->force_shutdown();
  };
}

asio::awaitable<void> ProcessExtension::run_restart(std::shared_ptr<ProcessExtension> self,
                                                    std::chrono::milliseconds delay, std::uint64_t epoch) {
  // The old child is reaped before a new one starts, so two never overlap.
  if (auto old = self->m_last_child) co_await old->wait_reaped(process::Child::k_reap_after_kill_bound);
  if (self->m_machine.state() != LifeState::restarting) co_return;  // stopped meanwhile
  util::log().warn(
      "extension '{}': Restarting extension process after transport failure (attempt={}, max_attempts={}, "
      "delay_ms={}){}",
      self->m_spec.id, self->m_machine.consecutive_restarts(), self->m_policy.max_attempts, delay.count(),
      self->m_last_stderr_tail.empty() ? std::string() : "; stderr tail: " + self->m_last_stderr_tail);
  if (delay.count() > 0) {
    self->m_backoff.expires_after(delay);
    co_await self->m_backoff.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  // Re-asked after the wait: a stop that came meanwhile makes this spawn nothing.
  self->perform(self->m_machine.handle({LifeInput::Kind::backoff_elapsed, epoch}));
}

asio::awaitable<void> ProcessExtension::initialize_restarted(std::shared_ptr<ProcessExtension> self,
                                                             std::uint64_t epoch) {
  auto instance = self->m_current;
  if (!instance || instance->epoch != epoch) co_return;
  auto result = co_await self->initialize_on(instance);
  // Only this child's own record is touched; the machine ignores an answer that came too late.
  if (!result) {
    if (self->m_machine.is_current(epoch)) self->m_last_restart_error = result.error();
    self->perform(self->m_machine.handle({LifeInput::Kind::initialize_failed, epoch}));
    co_return;
  }
  self->finish_initialize(*instance, *result);
}

void ProcessExtension::finish_initialize(Instance& instance, const protocol::InitializeResult& result) {
  if (m_machine.state() != LifeState::initializing || m_machine.epoch() != instance.epoch) return;
  // Published before anyone waiting for the child can use it (SPEC §6.1).
  instance.lifecycle->mark_initialized();
  m_inbox->set_cancellation(result.cancellation);
  m_scheduler.set_limit(result.concurrency, result.concurrency_declared);
  m_idempotent_tools.clear();
  for (const auto& tool : result.tools) {
    if (tool.idempotent) m_idempotent_tools.insert(tool.name);
  }
  m_last_initialize = result;
  perform(m_machine.handle({LifeInput::Kind::initialized, instance.epoch}));
}

void ProcessExtension::remember_stderr(const process::Child& child) {
  m_last_stderr_tail = child.stderr_snapshot().tail;
  if (child.reaped()) m_last_exit = child.exit_description();
}

std::string ProcessExtension::exit_description() const {
  if (m_current && m_current->child && m_current->child->reaped()) return m_current->child->exit_description();
  if (m_last_child && m_last_child->reaped()) return m_last_child->exit_description();
  return m_last_exit;
}

std::string ProcessExtension::stderr_tail() const {
  if (m_current && m_current->child) return m_current->child->stderr_snapshot().tail;
  if (m_last_child) return m_last_child->stderr_snapshot().tail;
  return m_last_stderr_tail;
}

void ProcessExtension::set_inbound_handler(std::shared_ptr<rpc::InboundHandler> handler) {
  m_inbox->set_inbound_handler(std::move(handler));
}

asio::awaitable<Result<protocol::InitializeResult>> ProcessExtension::initialize_on(std::shared_ptr<Instance> instance) {
  std::optional<std::string> root;
  if (m_plugin_root) root = m_plugin_root->string();
  auto params = protocol::initialize_params(m_spec.id, root, m_initialize_config);
  const std::uint64_t id = next_id();
  auto connection = instance->connection;
  asio::steady_timer deadline(m_executor, m_timeouts.initialize);
  auto raced = co_await (connection->call("initialize", params, id) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    instance->lifecycle->invalidate();
    co_return Error::timeout("Extension '" + m_spec.id + "' initialize timed out after " +
                             duration_text(m_timeouts.initialize));
  }
  auto reply = std::get<0>(std::move(raced));
  if (!reply) {
    instance->lifecycle->invalidate();
    co_return std::move(reply).error();
  }
  auto parsed = protocol::parse_initialize_result(m_spec.id, reply.value());
  if (!parsed) instance->lifecycle->invalidate();
  co_return parsed;
}

asio::awaitable<Result<protocol::InitializeResult>> ProcessExtension::initialize(
    std::optional<std::filesystem::path> plugin_root, boost::json::value config) {
  auto self = shared_from_this();
  m_initialize_config = std::move(config);
  m_plugin_root = plugin_root ? plugin_root : m_spec.cwd;
  if (m_machine.stop_requested()) co_return stopped_error();
  if (m_machine.state() != LifeState::initializing || !m_current) {
    // No child waiting for its handshake (it was killed): start one the restart way.
    auto ready = co_await ensure_running();
    if (!ready) co_return std::move(ready).error();
    if (!m_last_initialize) co_return Error::internal("Extension '" + m_spec.id + "' initialized without an answer");
    co_return *m_last_initialize;
  }
  auto instance = m_current;
  const std::uint64_t epoch = instance->epoch;
  auto result = co_await initialize_on(instance);
  if (!result) {
    perform(m_machine.handle({LifeInput::Kind::initialize_failed, epoch}));
    co_return result;
  }
  finish_initialize(*instance, *result);
  if (!m_machine.is_current(epoch) || m_machine.state() != LifeState::running) {
    co_return Error::extension("Extension '" + m_spec.id + "' was stopped while it initialized");
  }
  co_return result;
}

Error ProcessExtension::stopped_error() const {
  return Error::extension("Extension '" + m_spec.id + "' was stopped (unloaded or reloaded); not respawning it")
      .because(ErrorCause::stopped)
      .from(m_spec.id);
}

asio::awaitable<Result<void>> ProcessExtension::ensure_running() {
  bool asked = false;
  for (;;) {
    switch (m_machine.state()) {
      case LifeState::running:
        co_return Result<void>();
      case LifeState::stopping:
      case LifeState::stopped:
        co_return stopped_error();
      case LifeState::failed:
        co_return Error::extension("Extension '" + m_spec.id + "' exceeded restart limit (" +
                                   std::to_string(m_policy.max_attempts) + ")")
            .because(ErrorCause::restart_exhausted)
            .from(m_spec.id);
      case LifeState::down:
        if (asked) {
          if (m_last_restart_error) co_return *m_last_restart_error;
          co_return Error::extension("Extension '" + m_spec.id + "' process is not running")
              .because(ErrorCause::not_running)
              .from(m_spec.id);
        }
        asked = true;
        m_last_restart_error.reset();
        perform(m_machine.handle({LifeInput::Kind::restart_wanted}));
        break;
      case LifeState::spawning:
      case LifeState::initializing:
      case LifeState::restarting:
        co_await m_changed.wait();
        break;
    }
  }
}

asio::awaitable<Result<void>> ProcessExtension::restart_for_test() {
  auto self = shared_from_this();
  if (m_machine.state() == LifeState::running) {
    perform(m_machine.handle({LifeInput::Kind::transport_ended, m_machine.epoch()}));
    m_inbox->fail_all_pending("transport closed: process restarting");
  }
  co_return co_await ensure_running();
}

struct ProcessExtension::ProgressEntry {
  ProcessExtension& owner;
  std::uint64_t id;
  ProgressEntry(ProcessExtension& o, std::uint64_t i, const std::shared_ptr<CallActivity>& activity) : owner(o), id(i) {
    owner.m_activity[id] = activity;
  }
  ~ProgressEntry() { owner.m_activity.erase(id); }
  ProgressEntry(const ProgressEntry&) = delete;
  ProgressEntry& operator=(const ProgressEntry&) = delete;
};

asio::awaitable<void> ProcessExtension::idle_deadline(asio::any_io_executor ex, std::chrono::milliseconds limit,
                                                      std::shared_ptr<CallActivity> activity) {
  // Cancelled whenever the request answers first (every call): the wait must end quietly,
  // not by an exception thrown at the next suspension, which would cost more than the call.
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto cap = std::chrono::steady_clock::now() + limit * k_progress_total_multiple;
  asio::steady_timer timer(ex);
  for (;;) {
    const auto due = std::min(activity->last + limit, cap);
    if (std::chrono::steady_clock::now() >= due) {
      activity->capped = due == cap;
      co_return;
    }
    timer.expires_at(due);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (co_await cancelled()) co_return;  // the request ended first
  }
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call(std::string method, boost::json::value params,
                                                                   std::shared_ptr<CallActivity> activity) {
  auto self = shared_from_this();
  const auto limit = m_timeouts.for_method(method);
  if (!activity) activity = std::make_shared<CallActivity>();
  activity->last = std::chrono::steady_clock::now();
  auto sent = std::make_shared<std::uint64_t>(0);  // the epoch the request reached idle, or 0
  auto request = call_inner(method, std::move(params), sent, activity);
  auto raced = co_await (std::move(request) || idle_deadline(m_executor, limit, activity));
  if (raced.index() == 1) {
    // The caller's cancellation ends both sides too: then nothing is counted.
    if (co_await cancelled()) {
      co_return Error::cancelled("Extension '" + m_spec.id + "' method '" + method + "' was cancelled").from(m_spec.id);
    }
    m_outcomes.timeout.fetch_add(1, std::memory_order_relaxed);
    // Only a request an idle child received and left unanswered says anything about the
    // child. Hooks are not counted: a hook that never answers is suspended by the hook bus,
    // while the extension may well serve its tools. Nor is a request that reached its total
    // limit while reporting progress: that child is working, not frozen.
    if (*sent != 0 && method != "hook.handle" && !activity->capped) {
      perform(m_machine.handle({LifeInput::Kind::call_timed_out, *sent}));
    }
    std::string text = "Extension '" + m_spec.id + "' method '" + method + "' timed out after " + duration_text(limit);
    if (activity->capped) {
      text = "Extension '" + m_spec.id + "' method '" + method + "' ran past its total limit of " +
             duration_text(limit * k_progress_total_multiple) + " (progress extends its " + duration_text(limit) +
             " deadline up to " + std::to_string(k_progress_total_multiple) + " times)";
    }
    co_return Error::timeout(std::move(text)).because(ErrorCause::timeout).from(m_spec.id);
  }
  auto r = std::get<0>(std::move(raced));
  if (!r) co_return std::move(r).error().from(m_spec.id);
  co_return r;
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
    } else if (wire::is_application_error(r.error())) {
      outcomes.application_error.fetch_add(1, std::memory_order_relaxed);
    } else if (r.error().cause == ErrorCause::cancelled) {
      outcomes.abandoned.fetch_add(1, std::memory_order_relaxed);
    } else {
      outcomes.transport_error.fetch_add(1, std::memory_order_relaxed);
    }
    return r;
  }
};

// Whether a failure is how an ended child looks (its exit status is then worth waiting
// for); a protocol error (garbage on its output) leaves the child running.
bool looks_like_exit(const Error& e) { return e.cause == ErrorCause::transport; }

std::string tool_name_of(const boost::json::value& params) {
  if (const auto* o = params.if_object()) {
    if (const auto* n = o->if_contains("name"); n != nullptr && n->is_string()) return std::string(n->get_string());
  }
  return {};
}
}  // namespace

asio::awaitable<bool> ProcessExtension::cancelled() {
  auto state = co_await asio::this_coro::cancellation_state;
  co_return state.cancelled() != asio::cancellation_type::none;
}

bool ProcessExtension::retry_allowed(std::string_view method, const boost::json::value& params) const {
  if (m_spec.retry == RetryMode::reference) return true;
  if (method == "hook.handle" || method == "info.get" || method == "sidecar.spawn_args" ||
      method == "settings.editor.open") {
    return true;
  }
  if (method == "tool.call") return m_idempotent_tools.contains(tool_name_of(params));
  return false;
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_inner(std::string method, boost::json::value params,
                                                                         std::shared_ptr<std::uint64_t> sent,
                                                                         std::shared_ptr<CallActivity> activity) {
  OutcomeGuard outcome{m_outcomes};
  auto result = co_await call_inner_unobserved(std::move(method), std::move(params), std::move(sent), std::move(activity));
  outcome.record(result);
  co_return result;
}

asio::awaitable<Error> ProcessExtension::ended_report(std::shared_ptr<Instance> instance, Error failure,
                                                      std::string why_not) {
  const std::uint64_t epoch = instance->epoch;
  auto child = instance->child;
  bool reaped = child->reaped();
  if (!reaped && looks_like_exit(failure)) reaped = co_await child->wait_reaped(k_exit_status_wait);
  remember_stderr(*child);
  // Only this child's own epoch: a restart that began meanwhile is left alone. A child that
  // ended its output but not itself is killed here, and gone before the caller hears.
  perform(m_machine.handle({LifeInput::Kind::transport_ended, epoch}));
  if (!reaped) co_await child->wait_reaped(process::Child::k_reap_after_kill_bound);
  std::string report = failure.message;
  if (reaped) {
    report += "; extension '" + m_spec.id + "' " + child->exit_description();
  } else if (looks_like_exit(failure)) {
    report += "; extension '" + m_spec.id + "' was still running after its transport failed: stopped it";
  }
  if (!why_not.empty()) report += " (" + why_not + ")";
  const std::string tail = child->stderr_snapshot().tail;
  if (!tail.empty()) report += "\nstderr tail of extension '" + m_spec.id + "':\n" + tail;
  failure.message = std::move(report);
  if (failure.cause == ErrorCause::unspecified) failure.cause = ErrorCause::transport;
  co_return std::move(failure).from(m_spec.id);
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_inner_unobserved(
    std::string method, boost::json::value params, std::shared_ptr<std::uint64_t> sent,
    std::shared_ptr<CallActivity> activity) {
  const auto lane = method == "hook.handle" ? CallScheduler::Lane::hook : CallScheduler::Lane::normal;
  auto slot = co_await m_scheduler.admit(lane);
  if (!slot) co_return Error::cancelled("Extension '" + m_spec.id + "' method '" + method + "' was cancelled");
  if (activity->written) *activity->written = true;
  auto ready = co_await ensure_running();
  if (!ready) co_return std::move(ready).error();
  // A copy: the instance stays valid for this exchange whatever happens meanwhile.
  auto instance = m_current;
  if (!instance) {
    co_return Error::extension("Extension '" + m_spec.id + "' process is not running").because(ErrorCause::not_running);
  }
  if (!instance->lifecycle->live()) {
    // The child has already ended, and no request has told the machine yet: this one must
    // not be sent into its dead pipe, but to the next child.
    perform(m_machine.handle({LifeInput::Kind::transport_ended, instance->epoch}));
    auto again = co_await ensure_running();
    if (!again) co_return std::move(again).error();
    instance = m_current;
    if (!instance) {
      co_return Error::extension("Extension '" + m_spec.id + "' process is not running").because(ErrorCause::not_running);
    }
  }
  const std::uint64_t epoch = instance->epoch;
  const std::uint64_t id = next_id();
  *sent = slot.reached_idle_child() ? epoch : 0;
  const bool queued_behind = !slot.reached_idle_child();
  Result<boost::json::value> first;
  {
    ProgressEntry progress(*this, id, activity);
    first = co_await instance->connection->call(method, params, id);
  }
  // Abandoned (its deadline, or the caller's cancellation): the failure says nothing about
  // the child, and this coroutine must not act on it.
  if (co_await cancelled()) co_return first;
  if (first || wire::is_application_error(first.error())) {
    // It answered: a live transport, and the restart budget is whole again.
    perform(m_machine.handle({LifeInput::Kind::call_answered, epoch}));
    co_return first;
  }
  *sent = 0;
  if (m_machine.stop_requested() || first.error().cause == ErrorCause::stopped) co_return first;
  // Under limits, an ended child is reported rather than retried: the retry would meet the
  // same limit. A call not safe to repeat is never run twice.
  if (m_spec.limits.any() && looks_like_exit(first.error())) {
    co_return co_await ended_report(instance, std::move(first).error(), {});
  }
  // A request that never reached the child whole cannot have run: it always goes to the next.
  if (first.error().cause != ErrorCause::not_running && !retry_allowed(method, params)) {
    const std::string unsafe = method == "tool.call"
                                   ? "tool '" + tool_name_of(params) + "' is not declared idempotent"
                                   : "'" + method + "' is not safe to repeat";
    // Written behind other requests the child had not answered, this one may never have
    // been read, or may have run: either way it is not run again, and the caller is told.
    std::string why_not = queued_behind ? "not run again: it was queued behind other requests on the child "
                                          "that ended, and " + unsafe
                                        : "not retried: " + unsafe;
    co_return co_await ended_report(instance, std::move(first).error(), std::move(why_not));
  }
  const Error first_error = first.error();
  perform(m_machine.handle({LifeInput::Kind::transport_ended, epoch}));
  auto restarted = co_await ensure_running();
  if (!restarted) co_return std::move(restarted).error();
  auto retry_instance = m_current;
  if (!retry_instance) {
    co_return Error::extension("Extension '" + m_spec.id + "' process is not running").because(ErrorCause::not_running);
  }
  const std::uint64_t retry_epoch = retry_instance->epoch;
  const std::uint64_t retry_id = next_id();
  *sent = retry_epoch;
  Result<boost::json::value> retry;
  {
    ProgressEntry progress(*this, retry_id, activity);
    activity->last = std::chrono::steady_clock::now();
    retry = co_await retry_instance->connection->call(method, params, retry_id);
  }
  if (co_await cancelled()) co_return retry;
  if (retry) {
    perform(m_machine.handle({LifeInput::Kind::call_answered, retry_epoch}));
    co_return retry;
  }
  *sent = 0;
  if (wire::is_application_error(retry.error())) co_return retry;
  // How the second child ended and its stderr tail, as for a call that is not retried.
  Error failed(first_error.kind, first_error.message + "; retry after restart failed: " + retry.error().message,
               retry.error().cause == ErrorCause::unspecified ? ErrorCause::transport : retry.error().cause);
  co_return co_await ended_report(retry_instance, std::move(failed), {});
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::call_no_spawn(std::string method,
                                                                            boost::json::value params) {
  const auto lane = method == "hook.handle" ? CallScheduler::Lane::hook : CallScheduler::Lane::normal;
  auto slot = co_await m_scheduler.admit(lane);
  if (!slot) co_return Error::cancelled("Extension '" + m_spec.id + "' method '" + method + "' was cancelled");
  const std::uint64_t id = next_id();
  auto instance = m_current;
  if (!instance || m_machine.state() != LifeState::running) {
    co_return Error::extension("Extension '" + m_spec.id + "' process is not running; '" + method +
                               "' refused (no respawn)")
        .because(m_machine.stop_requested() ? ErrorCause::stopped : ErrorCause::not_running)
        .from(m_spec.id);
  }
  co_return co_await instance->connection->call(method, params, id);
}

asio::awaitable<Result<boost::json::value>> ProcessExtension::leased_call(boost::json::value params) {
  // The lease takes the child out of the slot: nothing else may be in flight on it.
  auto slot = co_await m_scheduler.exclusive();
  if (!slot) co_return Error::cancelled("Extension '" + m_spec.id + "' leased tool.call was cancelled");
  const std::uint64_t id = next_id();
  if (!m_current || m_machine.state() != LifeState::running) {
    co_return Error::extension("Extension '" + m_spec.id + "' process is not running; leased call refused (no respawn)")
        .because(ErrorCause::not_running)
        .from(m_spec.id);
  }
  // Out of the slot while waiting: a concurrent force_shutdown() sees no child to keep.
  std::shared_ptr<Instance> instance = std::move(m_current);
  m_has_state = false;
  auto result = co_await instance->connection->call("tool.call", params, id);
  // Put back only if nothing ended it meanwhile and nothing took its place.
  if (!m_inbox->closed() && !m_current && m_machine.is_current(instance->epoch) &&
      m_machine.state() == LifeState::running) {
    m_current = std::move(instance);
    m_has_state = true;
  } else {
    remember_stderr(*instance->child);
    instance->tear_down();  // the transport ended meanwhile: stop the reader, kill the group
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

Result<protocol::HookResult> ProcessExtension::hook_outcome(Result<boost::json::value> reply) const {
  if (!reply) {
    Error failure = std::move(reply).error();
    // The call paths may leave the cause open: what the failure says, then what the
    // lifecycle says now that it happened.
    if (failure.cause == ErrorCause::unspecified) {
      if (failure.kind == ErrorKind::timeout) {
        failure.cause = ErrorCause::timeout;
      } else if (ended_by_host(failure.message) || m_machine.stop_requested()) {
        failure.cause = ErrorCause::stopped;
      } else if (m_machine.state() == LifeState::failed) {
        failure.cause = ErrorCause::restart_exhausted;
      } else if (m_machine.state() != LifeState::running) {
        failure.cause = ErrorCause::not_running;
      } else {
        failure.cause = ErrorCause::transport;
      }
    }
    return std::move(failure).from(m_spec.id);
  }
  if (auto decoded = protocol::decode_hook_result(reply.value())) return std::move(*decoded);
  util::log().warn("extension '{}': Extension hook handler returned invalid result", m_spec.id);
  auto mapped = protocol::hook_result_from_reply(reply.value());
  if (std::holds_alternative<protocol::hook_result::Block>(mapped)) return mapped;  // a malformed modify
  return Error::extension("Extension '" + m_spec.id + "' hook.handle returned an invalid result")
      .because(ErrorCause::protocol)
      .from(m_spec.id);
}

asio::awaitable<Result<protocol::HookResult>> ProcessExtension::handle(const protocol::HookEvent& event) {
  co_return co_await handle_tracked(event, std::make_shared<bool>(false));
}

asio::awaitable<Result<protocol::HookResult>> ProcessExtension::handle_tracked(const protocol::HookEvent& event,
                                                                              std::shared_ptr<bool> written) {
  auto activity = std::make_shared<CallActivity>();
  activity->written = std::move(written);
  auto reply = co_await call("hook.handle", event.to_json(), std::move(activity));
  co_return hook_outcome(std::move(reply));
}

asio::awaitable<Result<protocol::HookResult>> ProcessExtension::handle_no_spawn(const protocol::HookEvent& event) {
  asio::steady_timer deadline(m_executor, m_timeouts.hook);
  auto raced = co_await (call_no_spawn("hook.handle", event.to_json()) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    if (co_await cancelled()) {
      co_return Error::cancelled("Extension '" + m_spec.id + "' method 'hook.handle' was cancelled").from(m_spec.id);
    }
    co_return Error::timeout("Extension '" + m_spec.id + "' method 'hook.handle' timed out after " +
                             duration_text(m_timeouts.hook))
        .because(ErrorCause::timeout)
        .from(m_spec.id);
  }
  co_return hook_outcome(std::get<0>(std::move(raced)));
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
                                                                                   rpc::Subscription& subscription,
                                                                                   std::shared_ptr<CallActivity> activity) {
  auto r = co_await call(std::move(method), std::move(params), std::move(activity));
  subscription.unsubscribe();
  co_return r;
}

asio::awaitable<void> ProcessExtension::forward_stream(rpc::Subscription& subscription, ProviderEventSink& sink,
                                                       std::shared_ptr<CallActivity> activity) {
  bool sink_open = true;
  for (;;) {
    auto frame = co_await subscription.queue().pop();
    if (!frame) break;
    // One stream at a time per extension: each of its events is this request's progress.
    if (frame->method == "provider.stream.event") activity->last = std::chrono::steady_clock::now();
    co_await forward_provider_stream_frame(m_spec.id, sink, sink_open, std::move(*frame));
  }
}

namespace {
// A streamed request's whole run, answer and forwarding together, however much progress it
// reports: the bound on a consumer that stops reading, too.
std::chrono::milliseconds total_limit(std::chrono::milliseconds deadline) {
  return deadline * ProcessExtension::k_progress_total_multiple;
}

// The reference's "timed out" text of a streamed method; when progress kept it going to its
// total limit, what that limit was.
Error streamed_timeout(const std::string& id, const char* method, std::chrono::milliseconds deadline, bool capped) {
  std::string text = "Extension '" + id + "' " + method + " timed out";
  if (capped) {
    text += ": it ran past its total limit of " + duration_text(total_limit(deadline)) + " (progress extends its " +
            duration_text(deadline) + " deadline up to " +
            std::to_string(ProcessExtension::k_progress_total_multiple) + " times)";
  }
  return Error::timeout(std::move(text)).because(ErrorCause::timeout).from(id);
}

// Whether a notification is progress of the command invoked as `request_id`: its output
// (command.output names the request) or its task events.
bool is_progress_of(const rpc::NotificationFrame& frame, std::string_view request_id) {
  if (frame.method.starts_with("task.")) return true;
  if (frame.method != "command.output") return false;
  const auto* o = frame.params.if_object();
  const auto* id = o ? o->if_contains("request_id") : nullptr;
  return id != nullptr && id->is_string() && id->get_string() == request_id;
}
}  // namespace

asio::awaitable<Result<protocol::ProviderCompleteResult>> ProcessExtension::provider_stream(boost::json::value params,
                                                                                            ProviderEventSink& sink) {
  auto self = shared_from_this();
  auto subscription = m_inbox->subscribe();  // before the request: no early event is missed
  auto activity = std::make_shared<CallActivity>();
  asio::steady_timer deadline(m_executor, total_limit(m_timeouts.provider_stream));
  auto raced = co_await ((call_then_unsubscribe("provider.stream", std::move(params), subscription, activity) &&
                          forward_stream(subscription, sink, activity)) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    if (co_await cancelled()) co_return Error::cancelled("Extension '" + m_spec.id + "' provider.stream was cancelled");
    m_outcomes.timeout.fetch_add(1, std::memory_order_relaxed);
    co_return streamed_timeout(m_spec.id, "provider.stream", m_timeouts.provider_stream, true);
  }
  auto reply = std::get<0>(std::move(raced));
  if (!reply) {
    if (reply.error().kind == ErrorKind::timeout) {
      co_return streamed_timeout(m_spec.id, "provider.stream", m_timeouts.provider_stream, activity->capped);
    }
    co_return std::move(reply).error();
  }
  // Empty content is fine here: the text may have come entirely as deltas.
  co_return protocol::parse_provider_result(m_spec.id, "provider.stream", reply.value());
}

asio::awaitable<bool> ProcessExtension::forward_invoke(rpc::Subscription& subscription, std::string request_id,
                                                       InvokeEventChannel& channel,
                                                       std::shared_ptr<CallActivity> activity) {
  bool sink_open = true;
  bool saw_done = false;
  for (;;) {
    auto frame = co_await subscription.queue().pop();
    if (!frame) break;
    if (is_progress_of(*frame, request_id)) activity->last = std::chrono::steady_clock::now();
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
  auto activity = std::make_shared<CallActivity>();
  asio::steady_timer deadline(m_executor, total_limit(m_timeouts.command_invoke));
  auto raced = co_await ((call_then_unsubscribe("command.invoke", std::move(params), subscription, activity) &&
                          forward_invoke(subscription, request_id, channel, activity)) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    if (co_await cancelled()) co_return Error::cancelled("Extension '" + m_spec.id + "' command.invoke was cancelled");
    m_outcomes.timeout.fetch_add(1, std::memory_order_relaxed);
    co_return streamed_timeout(m_spec.id, "command.invoke", m_timeouts.command_invoke, true);
  }
  auto both = std::get<0>(std::move(raced));
  auto& reply = std::get<0>(both);
  if (!reply && reply.error().kind == ErrorKind::timeout) {
    co_return streamed_timeout(m_spec.id, "command.invoke", m_timeouts.command_invoke, activity->capped);
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
  // From here on the machine spawns nothing, whatever is suspended anywhere (SPEC §6.9:
  // the generation is invalidated before waiting for the call lock).
  perform(m_machine.handle({LifeInput::Kind::stop_requested}));
  // Calls in flight are cancelled, not awaited: an extension that declared cancellation
  // hears of each, so it can stop its work before the shutdown request.
  if (auto instance = m_current; instance && m_inbox->cancellation()) {
    for (const std::uint64_t id : m_inbox->pending_ids()) {
      boost::json::object params;
      params["id"] = id;
      const boost::json::value cancel(std::move(params));
      const std::string method = "$/cancelRequest";
      auto sent = co_await instance->connection->notify(method, cancel);
      if (!sent) break;
      m_inbox->counters().cancel_notifications.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // The polite rung: a shutdown request, once nothing is in flight, within its deadline.
  asio::steady_timer deadline(m_executor, m_timeouts.shutdown_request);
  auto locked = co_await (m_scheduler.exclusive() || deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (auto instance = m_current; locked.index() == 0 && instance && std::get<0>(locked)) {
    auto guard = std::get<0>(std::move(locked));
    deadline.expires_after(m_timeouts.shutdown_request);
    boost::json::value null_params;
    co_await (instance->connection->call("shutdown", null_params, next_id()) ||
              deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  }
  // Re-read after every wait: whatever child is current now is the one to stop.
  if (auto instance = std::move(m_current)) {
    m_has_state = false;
    remember_stderr(*instance->child);
    instance->connection->stop();  // closes stdin: a well-behaved child exits now
    instance->lifecycle->invalidate();
    auto child = instance->child;
    m_last_child = child;
    m_stopping = child;  // force_shutdown() may cut the ladder short
    co_await child->wait_reaped(m_timeouts.shutdown_grace);
    co_await child->stop(m_timeouts.shutdown_grace);  // SIGTERM, grace, SIGKILL: to the group
    m_stopping.reset();
    remember_stderr(*child);
    instance->tear_down();
  }
  m_inbox->drop_subscribers();
  m_inbox->fail_all_pending("transport closed: extension shutdown", ErrorCause::stopped);
  perform(m_machine.handle({LifeInput::Kind::stop_finished}));
}

void ProcessExtension::force_shutdown() {
  m_inbox->invalidate_lifecycle();
  if (m_stopping) m_stopping->kill_group();  // a stop ladder still waiting: end it now
  perform(m_machine.handle({LifeInput::Kind::killed}));
  if (auto instance = std::move(m_current)) {  // during a stop, or a lease: end it too
    m_has_state = false;
    remember_stderr(*instance->child);
    m_last_child = instance->child;
    instance->tear_down();  // stops the reader, kills the group; the reaper collects the child
  }
  m_inbox->drop_subscribers();
  m_inbox->fail_all_pending("transport closed: extension cancelled", ErrorCause::stopped);
}

std::optional<Lifecycle> ProcessExtension::lifecycle_snapshot() const {
  return m_inbox->snapshot(m_total_restarts.load() > 0);
}

Health ProcessExtension::health() const {
  if (m_restart_count.load() >= m_policy.max_attempts) return Health::failed;
  if (m_unresponsive.load()) return Health::unresponsive;
  if (m_total_restarts.load() > 0) return m_has_state.load() ? Health::degraded : Health::restarting;
  return Health::running;
}

void ProcessExtension::publish_health() {
  m_total_restarts = m_machine.total_restarts();
  m_restart_count = m_machine.consecutive_restarts();
  m_unresponsive = m_machine.unresponsive() && m_machine.state() != LifeState::running;
  m_stopped = m_machine.stop_requested();
}

}  // namespace exthost::runtime
