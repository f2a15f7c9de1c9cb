// runtime/process_extension.hpp — an extension run as a child process (seed 003).
//
// Every decision about its children (spawn, initialize, restart, stop) is taken by a
// LifecycleMachine (runtime/lifecycle_machine.hpp); the coroutines here feed it what
// happened and perform what it answers, and ask it again after every suspension. A
// coroutine holds the child it works on by shared pointer (an Instance), never by
// reference into this object, so a stop or restart meanwhile cannot free it under them.
//
// Promises:
// - Requests run side by side (runtime/call_scheduler.hpp): up to the concurrency the
//   extension declared in its initialize answer, hooks ahead of queued calls; with the
//   default of 1 every request is written to the pipe at once, in call order. Replies are
//   matched by id, in any order. Notifications and inbound requests flow beside them.
// - Every deadline is the method's real one (SPEC A2), counted from the request's last sign
//   of life: progress tied to it ("$/progress" {id}, its command's output and task events,
//   its stream's events) starts it again, up to k_progress_total_multiple times the
//   deadline in all. A timed-out call is abandoned (its late reply dropped and counted);
//   the child is neither killed nor restarted for it. A cancelled call (the caller's Asio
//   cancellation) is abandoned the same way and counts for nothing.
// - A transport failure mid-call ends the child; the next request restarts it within the
//   RestartPolicy budget. Only calls safe to repeat are sent again to the restarted child,
//   once, with a fresh id: hooks, info.get, sidecar.spawn_args, settings.editor.open and
//   tools declared `idempotent` (every call under RetryMode::reference, the reference's
//   behaviour). Any other fails with how the child ended and its stderr tail, and is not
//   run again. k_unresponsive_after_timeouts calls in a row that reached an idle child and
//   timed out restart it too (health `unresponsive` meanwhile); an application error
//   ("Extension error: …", cause `application`) is returned verbatim and never restarts
//   anything. A stopped extension never respawns.
// - The resolved initialize config lives only in memory and is re-sent on every restart.
// - A child under resource limits that ends during a call is not restarted for a retry (the
//   retry would meet the same limit), whatever the method: the call fails with the
//   transport error, how the child ended and its stderr tail; the next call restarts it.
//
// Threading: all coroutines run on the host's I/O thread. lifecycle_snapshot(), health()
// and restart_count() may be called from any thread.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "process/child.hpp"
#include "protocol/initialize.hpp"
#include "exthost/retry.hpp"
#include "runtime/call_scheduler.hpp"
#include "rpc/connection.hpp"
#include "rpc/event.hpp"
#include "rpc/inbox.hpp"
#include "runtime/extension_handler.hpp"
#include "runtime/lifecycle_machine.hpp"
#include "runtime/restart_policy.hpp"
#include "runtime/timeouts.hpp"

namespace exthost::runtime {

// Which calls a restarted child gets again after a transport failure mid-call.
using RetryMode = exthost::RetryMode;

// How far a request is from its deadline: progress tied to it moves `last` forward.
struct CallActivity {
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  bool capped = false;  // the total limit, not idleness, ended it
  std::shared_ptr<bool> written;  // set once the request is admitted to the child, if given
};

struct ProcessSpec {
  std::string id;
  std::string command;  // absolute, or a bare name looked up in PATH
  std::vector<std::string> args;
  std::optional<std::filesystem::path> cwd;  // the plugin directory
  std::vector<std::string> environment;      // "NAME=value"; the allowlist when empty
  ResourceLimits limits;                     // per child (exthost/limits.hpp)
  RetryMode retry = RetryMode::safe;
};

// Requests by how they ended (SPEC A11). Read from any thread.
struct CallOutcomes {
  std::atomic<std::uint64_t> ok{0};
  std::atomic<std::uint64_t> application_error{0};  // the extension answered with an error
  std::atomic<std::uint64_t> transport_error{0};    // no answer: the child or its pipes failed
  std::atomic<std::uint64_t> timeout{0};            // the method's deadline passed
  std::atomic<std::uint64_t> abandoned{0};          // ended without an answer: timeouts and cancellations
};

class ProcessExtension final : public ExtensionHandler, public std::enable_shared_from_this<ProcessExtension> {
 public:
  // Spawns the child (no handshake yet). Error: "Failed to spawn extension '<id>': …".
  static boost::asio::awaitable<Result<std::shared_ptr<ProcessExtension>>> spawn(
      boost::asio::any_io_executor ex, ProcessSpec spec, Timeouts timeouts = {}, RestartPolicy policy = {});
  ~ProcessExtension() override;

  // The load-time handshake (no restart; deadline Timeouts::initialize). Keeps `config` in
  // memory for restarts. On any failure the generation is invalidated.
  boost::asio::awaitable<Result<protocol::InitializeResult>> initialize(std::optional<std::filesystem::path> plugin_root,
                                                                        boost::json::value config);

  // One request with the method's idle deadline, a restart after a transport failure, and
  // one retry when the method is safe to repeat. `activity`, when given, is the request's
  // progress record, shared with whoever sees progress for it.
  boost::asio::awaitable<Result<boost::json::value>> call(std::string method, boost::json::value params,
                                                          std::shared_ptr<CallActivity> activity = nullptr);
  // One request on the running child only; never spawns or restarts.
  boost::asio::awaitable<Result<boost::json::value>> call_no_spawn(std::string method, boost::json::value params);

  // One tool.call that never spawns or restarts (the reference's leased path): the running
  // child's state is taken out of the slot while the call waits, so a concurrent
  // force_shutdown() finds no child and fails the call; it is put back only if the
  // transport survived. Deadline: Timeouts::tool_call.
  boost::asio::awaitable<Result<boost::json::value>> call_tool_once_no_spawn(std::string name, boost::json::value input,
                                                                            std::optional<std::string> session_id,
                                                                            std::optional<std::filesystem::path> cwd,
                                                                            std::optional<protocol::Author> caller);

  // Stops at once: fails pending calls with "transport closed: extension cancelled", and
  // kills a child whose stop ladder is still waiting. Not terminal: a later call() restarts
  // the child (unless shutdown() ran).
  void force_shutdown();
  // A child is running, or still on its way down through shutdown()'s ladder.
  bool has_live_child() const { return m_current != nullptr || (m_stopping && !m_stopping->reaped()); }

  // Inbound requests from the extension are served by `handler` (memory.*, config.*).
  void set_inbound_handler(std::shared_ptr<rpc::InboundHandler> handler);

  const std::string& id() const override { return m_spec.id; }
  std::optional<Lifecycle> lifecycle_snapshot() const override;
  boost::asio::awaitable<Result<protocol::HookResult>> handle(const protocol::HookEvent& event) override;
  boost::asio::awaitable<Result<protocol::HookResult>> handle_no_spawn(const protocol::HookEvent& event) override;
  boost::asio::awaitable<Result<protocol::HookResult>> handle_tracked(const protocol::HookEvent& event,
                                                                      std::shared_ptr<bool> written) override;
  boost::asio::awaitable<Result<boost::json::value>> call_tool_for(std::string name, boost::json::value input,
                                                                  std::optional<std::string> session_id,
                                                                  std::optional<std::filesystem::path> cwd) override;
  boost::asio::awaitable<Result<boost::json::value>> call_tool_as(std::string name, boost::json::value input,
                                                                 std::optional<std::string> session_id,
                                                                 std::optional<std::filesystem::path> cwd,
                                                                 std::optional<protocol::Author> caller) override;
  boost::asio::awaitable<Result<protocol::ProviderCompleteResult>> provider_complete(boost::json::value params) override;
  boost::asio::awaitable<Result<protocol::ProviderCompleteResult>> provider_stream(boost::json::value params,
                                                                                  ProviderEventSink& sink) override;
  boost::asio::awaitable<Result<boost::json::value>> invoke_command(std::string command, std::vector<std::string> args,
                                                                   std::string request_id,
                                                                   InvokeEventChannel& channel) override;
  boost::asio::awaitable<Result<protocol::PluginInfo>> get_info() override;
  boost::asio::awaitable<Result<boost::json::value>> settings_editor_open(std::string category, std::string field) override;
  boost::asio::awaitable<Result<boost::json::value>> settings_editor_key(std::string category, std::string field,
                                                                        std::string key) override;
  boost::asio::awaitable<Result<boost::json::value>> settings_editor_commit(std::string category, std::string field,
                                                                           boost::json::value value) override;
  boost::asio::awaitable<Result<protocol::SidecarSpawnArgs>> sidecar_spawn_args() override;
  boost::asio::awaitable<void> shutdown() override;
  rpc::Subscription subscribe_notifications(const boost::asio::any_io_executor&) override { return m_inbox->subscribe(); }
  rpc::Subscription subscribe_notifications() { return m_inbox->subscribe(); }
  Health health() const override;
  // Lifetime restarts: never reset.
  std::size_t restart_count() const override { return m_total_restarts.load(); }

  // Inspection, for the host and for tests.
  const CallOutcomes& outcomes() const { return m_outcomes; }
  rpc::Inbox& inbox() { return *m_inbox; }
  std::shared_ptr<process::Child> child() const { return m_current ? m_current->child : nullptr; }
  // The current child's connection (null when none): for pipelined traffic that bypasses
  // the call lock, such as the benchmark's.
  std::shared_ptr<rpc::Connection> connection() const { return m_current ? m_current->connection : nullptr; }
  // unload, reload or shutdown began: nothing will be spawned again.
  // Any thread.
  bool stopped() const { return m_stopped.load(); }
  // I/O thread only.
  LifeState life_state() const { return m_machine.state(); }
  std::size_t consecutive_restarts() const { return m_restart_count.load(); }
  const RestartPolicy& restart_policy() const { return m_policy; }
  // Children spawned over this extension's life (the first one included).
  std::size_t spawn_count() const { return m_spawns.load(); }
  // Tests hold the scheduler exclusively and drive a restart directly, as the reference's
  // tests do with its call lock.
  CallScheduler& scheduler() { return m_scheduler; }
  // Whether a failed `method` call may be sent again to a restarted child.
  bool retry_allowed(std::string_view method, const boost::json::value& params) const;
  // Ends the current child as a transport failure would and waits for the restart.
  boost::asio::awaitable<Result<void>> restart_for_test();
  const Timeouts& timeouts() const { return m_timeouts; }
  // The stderr tail of the current child, or of the last one that ran.
  std::string stderr_tail() const;
  // How the current child ended (Child::exit_description), or the last one that ran; empty
  // when no child has ended.
  std::string exit_description() const;

  // How long a failed call waits for its exiting child's status, to report how it ended.
  static constexpr std::chrono::milliseconds k_exit_status_wait{1000};
  // The timer anchor's period: below every call deadline except the quick and shutdown ones.
  static constexpr std::chrono::seconds k_timer_anchor_period{25};
  // However much progress a request reports, it ends after this many times its deadline.
  static constexpr int k_progress_total_multiple = 4;

 private:
  // One child: its process, connection and lifecycle record. Held by shared pointer by
  // whichever coroutine works on it; tear_down() (also run by the destructor) invalidates
  // the generation, stops the reader and kills the child's group.
  struct Instance {
    std::uint64_t epoch = 0;
    std::shared_ptr<process::Child> child;
    std::shared_ptr<rpc::Connection> connection;
    std::shared_ptr<rpc::Lifecycle> lifecycle;
    void tear_down();
    ~Instance();
  };

  ProcessExtension(boost::asio::any_io_executor ex, ProcessSpec spec, Timeouts timeouts, RestartPolicy policy);
  Result<std::shared_ptr<Instance>> spawn_instance(std::uint64_t epoch);
  // Carries out the machine's actions (synchronously; restarts and handshakes are spawned
  // as coroutines of their own).
  void perform(std::vector<LifeAction> actions);
  void publish_health();
  std::function<void(std::exception_ptr)> report_failure(const char* what);
  static boost::asio::awaitable<void> run_restart(std::shared_ptr<ProcessExtension> self,
                                                  std::chrono::milliseconds delay, std::uint64_t epoch);
  static boost::asio::awaitable<void> initialize_restarted(std::shared_ptr<ProcessExtension> self, std::uint64_t epoch);
  boost::asio::awaitable<Result<protocol::InitializeResult>> initialize_on(std::shared_ptr<Instance> instance);
  void finish_initialize(Instance& instance, const protocol::InitializeResult& result);
  // Waits until a child serves, asking for one restart if there is none; the error says why not.
  boost::asio::awaitable<Result<void>> ensure_running();
  Error stopped_error() const;
  // Whether the calling coroutine was cancelled (a deadline or its caller's cancellation).
  static boost::asio::awaitable<bool> cancelled();
  boost::asio::awaitable<Result<boost::json::value>> call_inner(std::string method, boost::json::value params,
                                                                std::shared_ptr<std::uint64_t> sent,
                                                                std::shared_ptr<CallActivity> activity);
  boost::asio::awaitable<Result<boost::json::value>> call_inner_unobserved(std::string method, boost::json::value params,
                                                                           std::shared_ptr<std::uint64_t> sent,
                                                                           std::shared_ptr<CallActivity> activity);
  // A call that failed on a transport and is not sent again: how the child ended (when it
  // did, within k_exit_status_wait) and its stderr tail are added to `failure`.
  boost::asio::awaitable<Error> ended_report(std::shared_ptr<Instance> instance, Error failure, std::string why_not);
  // Ends when the request's idle deadline or its total limit passes (or on cancellation).
  static boost::asio::awaitable<void> idle_deadline(boost::asio::any_io_executor ex, std::chrono::milliseconds limit,
                                                    std::shared_ptr<CallActivity> activity);
  // One request's registration for "$/progress" {id}: forgotten when the request ends.
  struct ProgressEntry;
  boost::asio::awaitable<Result<boost::json::value>> leased_call(boost::json::value params);
  // call(), with a deadline error in the reference's words for that method
  // ("Extension '<id>' info.get timed out").
  boost::asio::awaitable<Result<boost::json::value>> call_named_timeout(std::string method, boost::json::value params);
  boost::asio::awaitable<Result<boost::json::value>> call_then_unsubscribe(std::string method, boost::json::value params,
                                                                          rpc::Subscription& subscription,
                                                                          std::shared_ptr<CallActivity> activity);
  boost::asio::awaitable<bool> forward_invoke(rpc::Subscription& subscription, std::string request_id,
                                              InvokeEventChannel& channel, std::shared_ptr<CallActivity> activity);
  boost::asio::awaitable<void> forward_stream(rpc::Subscription& subscription, ProviderEventSink& sink,
                                              std::shared_ptr<CallActivity> activity);
  // A hook.handle reply as handle() answers it: failures carry their cause and this id.
  Result<protocol::HookResult> hook_outcome(Result<boost::json::value> reply) const;
  std::uint64_t next_id() { return m_next_id++; }
  void remember_stderr(const process::Child& child);

  boost::asio::any_io_executor m_executor;
  ProcessSpec m_spec;
  Timeouts m_timeouts;
  RestartPolicy m_policy;
  LifecycleMachine m_machine;           // I/O thread only
  std::shared_ptr<rpc::Inbox> m_inbox;  // outlives every child
  CallScheduler m_scheduler;            // who is in flight, who waits
  rpc::Event m_changed;                 // the machine's state changed
  boost::asio::steady_timer m_backoff;  // the restart delay under way
  std::shared_ptr<Instance> m_current;  // the child serving now; null when none
  std::shared_ptr<process::Child> m_last_child;  // the one before it, until the next ends
  std::optional<Error> m_last_restart_error;
  std::optional<protocol::InitializeResult> m_last_initialize;
  std::unordered_set<std::string> m_idempotent_tools;  // of the last initialize answer
  // Requests in flight by id, for "$/progress": the record of each (I/O thread only).
  std::unordered_map<std::uint64_t, std::weak_ptr<CallActivity>> m_activity;
  std::uint64_t m_next_id = 1;
  // Mirrors of the machine for other threads (health(), restart_count()).
  std::atomic<std::size_t> m_restart_count{0};   // consecutive: the exhaustion budget
  std::atomic<std::size_t> m_total_restarts{0};  // lifetime: never reset
  std::atomic<bool> m_unresponsive{false};
  std::atomic<bool> m_stopped{false};
  CallOutcomes m_outcomes;
  std::atomic<bool> m_has_state{false};          // mirrors m_current for health() off-thread
  std::atomic<std::size_t> m_spawns{0};
  boost::json::value m_initialize_config;        // memory only: never logged or written
  std::optional<std::filesystem::path> m_plugin_root;
  std::string m_last_stderr_tail;
  std::string m_last_exit;
  std::shared_ptr<process::Child> m_stopping;  // the child shutdown() is stopping, meanwhile
  // Always armed, and earlier than any call's deadline: arming and cancelling a deadline
  // then never makes it the earliest timer, which would reprogram the reactor's timerfd
  // twice per call. It wakes the I/O thread once per period.
  boost::asio::steady_timer m_timer_anchor;
  static void arm_timer_anchor(std::weak_ptr<ProcessExtension> weak);
};

}  // namespace exthost::runtime
