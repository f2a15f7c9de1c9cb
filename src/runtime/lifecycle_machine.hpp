// runtime/lifecycle_machine.hpp — the decisions about one extension's children, without I/O.
//
// Every choice about spawning, initializing, restarting and stopping an extension is made
// here, and only here; ProcessExtension is a shell that feeds this machine what happened
// and performs the actions it returns. Each child is an *epoch* (1, 2, …, allocated by the
// machine); an input about an epoch that is no longer current is ignored, so a reply, an
// EOF or a timeout from an old child can never act on its successor.
//
// States and transitions (inputs not listed leave the state unchanged and act on nothing):
//
//   state         input                      next          actions
//   ------------  -------------------------  ------------  ------------------------------------------
//   spawning(e)   spawned(e)                 initializing  send_initialize(e) (restarts only; a load sends its own)
//                 spawn_failed(e)            down          wake
//                 stop_requested             stopping      invalidate, wake
//   initializing  initialized(e)             running       wake
//                 initialize_failed(e)       down          tear_down(e), wake
//                 transport_ended(e)         down          tear_down(e), wake
//                 stop_requested             stopping      invalidate, wake
//   running(e)    call_answered(e)           running       (the restart budget and timeout count reset)
//                 call_timed_out(e)          running       (counted; at k_unresponsive_after_timeouts:)
//                                            restarting    tear_down(e), fail_pending, start_backoff
//                 transport_ended(e)         down          tear_down(e), wake
//                 killed                     down          tear_down(e), fail_pending, wake
//                 stop_requested             stopping      invalidate, wake
//   down          restart_wanted             restarting    start_backoff(delay)          (budget left)
//                                            failed        wake                          (budget spent)
//                 stop_requested             stopping      invalidate, wake
//   restarting    backoff_elapsed            spawning      spawn(e+1)
//                 stop_requested             stopping      cancel_backoff, invalidate, wake
//   failed        stop_requested             stopping      invalidate, wake
//   stopping      spawned(e)                 stopping      tear_down(e)   (never serves)
//                 stop_finished              stopped       wake
//   stopped       —                          stopped       (terminal)
//
// Once stop_requested has been fed, no input ever yields spawn or send_initialize again.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/restart_policy.hpp"

namespace exthost::runtime {

// Calls that reach the child and time out in a row before it is declared unresponsive and
// restarted: one slow call is the call's problem, three in a row are the child's.
inline constexpr std::uint32_t k_unresponsive_after_timeouts = 3;

enum class LifeState : std::uint8_t { spawning, initializing, running, down, restarting, stopping, stopped, failed };
std::string_view to_string(LifeState s);

struct LifeInput {
  enum class Kind : std::uint8_t {
    spawned,            // the child of `epoch` runs
    spawn_failed,       // it could not be started
    initialized,        // it answered initialize
    initialize_failed,  // initialize failed or timed out
    transport_ended,    // its connection ended: EOF, exit, write failure, reader error
    call_answered,      // a call on it got an answer (a result or the extension's own error)
    call_timed_out,     // a call written to it got no answer within its deadline
    killed,             // the host ended it at once (force_shutdown); not terminal
    restart_wanted,     // a call needs a child and there is none
    backoff_elapsed,    // the restart delay passed
    stop_requested,     // unload, reload, shutdown: terminal
    stop_finished,      // the stop ladder is done
  };
  LifeInput(Kind k, std::uint64_t e = 0) : kind(k), epoch(e) {}
  Kind kind;
  std::uint64_t epoch = 0;  // for the inputs about one child; ignored by the others
};

struct LifeAction {
  enum class Kind : std::uint8_t {
    spawn,            // start child `epoch`
    send_initialize,  // handshake child `epoch` (a restart)
    tear_down,        // invalidate child `epoch`'s generation, stop its reader, kill its group
    fail_pending,     // fail the calls in flight with `reason`
    start_backoff,    // wait `delay`, then feed backoff_elapsed
    cancel_backoff,   // a stop came during the delay
    invalidate,       // invalidate the published generation (a stop is under way)
    wake,             // the state changed: callers waiting for it re-check
  };
  LifeAction(Kind k, std::uint64_t e = 0, std::chrono::milliseconds d = {}, std::string r = {})
      : kind(k), epoch(e), delay(d), reason(std::move(r)) {}
  Kind kind;
  std::uint64_t epoch = 0;
  std::chrono::milliseconds delay{0};
  std::string reason;
};

class LifecycleMachine {
 public:
  // The machine of an extension whose first child (epoch 1) is being spawned by its load.
  explicit LifecycleMachine(RestartPolicy policy, std::string extension_id);

  std::vector<LifeAction> handle(LifeInput input);

  LifeState state() const { return m_state; }
  // The epoch of the child the state refers to (0 before the first spawn).
  std::uint64_t epoch() const { return m_epoch; }
  bool is_current(std::uint64_t epoch) const { return epoch == m_epoch && serving_states(); }
  bool stop_requested() const { return m_state == LifeState::stopping || m_state == LifeState::stopped; }
  // States a caller waits through: a child is on its way.
  bool in_transition() const {
    return m_state == LifeState::spawning || m_state == LifeState::initializing || m_state == LifeState::restarting;
  }
  // Consecutive restarts since the last answered call: the exhaustion budget.
  std::uint32_t consecutive_restarts() const { return m_attempts; }
  // Restarts over the extension's life, never reset.
  std::uint64_t total_restarts() const { return m_total_restarts; }
  std::uint32_t consecutive_timeouts() const { return m_timeouts; }
  // The last restart was caused by k_unresponsive_after_timeouts timeouts in a row, and no
  // call has been answered since.
  bool unresponsive() const { return m_unresponsive; }
  // Whether the next restart_wanted would be refused for an exhausted budget.
  bool budget_spent() const { return m_attempts >= m_policy.max_attempts; }
  const RestartPolicy& policy() const { return m_policy; }

 private:
  bool serving_states() const {
    return m_state == LifeState::spawning || m_state == LifeState::initializing || m_state == LifeState::running ||
           m_state == LifeState::stopping;
  }
  std::vector<LifeAction> restart(std::vector<LifeAction> actions);
  std::vector<LifeAction> stop();

  RestartPolicy m_policy;
  std::string m_id;
  LifeState m_state = LifeState::spawning;
  std::uint64_t m_epoch = 1;
  std::uint32_t m_attempts = 0;
  std::uint64_t m_total_restarts = 0;
  std::uint32_t m_timeouts = 0;
  bool m_unresponsive = false;
  bool m_restarting = false;  // the current epoch was spawned by a restart (it initializes itself)
};

}  // namespace exthost::runtime
