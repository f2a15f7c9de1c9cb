#include "runtime/lifecycle_machine.hpp"

namespace exthost::runtime {

std::string_view to_string(LifeState s) {
  switch (s) {
    case LifeState::spawning: return "spawning";
    case LifeState::initializing: return "initializing";
    case LifeState::running: return "running";
    case LifeState::down: return "down";
    case LifeState::restarting: return "restarting";
    case LifeState::stopping: return "stopping";
    case LifeState::stopped: return "stopped";
    case LifeState::failed: return "failed";
  }
  return "unknown";
}

LifecycleMachine::LifecycleMachine(RestartPolicy policy, std::string extension_id)
    : m_policy(policy), m_id(std::move(extension_id)) {}

std::vector<LifeAction> LifecycleMachine::stop() {
  std::vector<LifeAction> actions;
  if (m_state == LifeState::restarting) actions.push_back({LifeAction::Kind::cancel_backoff});
  m_state = LifeState::stopping;
  actions.push_back({LifeAction::Kind::invalidate});
  actions.push_back({LifeAction::Kind::wake});
  return actions;
}

std::vector<LifeAction> LifecycleMachine::restart(std::vector<LifeAction> actions) {
  // The budget is checked before counting: a restart that is refused is not a restart, so
  // neither count ever goes past the policy's limit.
  if (m_attempts >= m_policy.max_attempts) {
    m_state = LifeState::failed;
    actions.push_back({LifeAction::Kind::wake});
    return actions;
  }
  ++m_attempts;
  ++m_total_restarts;
  m_state = LifeState::restarting;
  const auto delay = m_policy.delay_for_attempt(m_attempts).value_or(std::chrono::milliseconds(0));
  actions.push_back({LifeAction::Kind::start_backoff, m_epoch, delay, {}});
  actions.push_back({LifeAction::Kind::wake});
  return actions;
}

std::vector<LifeAction> LifecycleMachine::handle(LifeInput in) {
  using K = LifeInput::Kind;
  using A = LifeAction::Kind;
  const bool current = in.epoch == m_epoch;

  if (m_state == LifeState::stopped) return {};
  if (in.kind == K::stop_requested) {
    if (m_state == LifeState::stopping) return {};
    return stop();
  }
  if (m_state == LifeState::stopping) {
    if (in.kind == K::stop_finished) {
      m_state = LifeState::stopped;
      return {{A::wake}};
    }
    // A child that comes up while the stop is under way never serves.
    if (in.kind == K::spawned && current) return {{A::tear_down, in.epoch}};
    return {};
  }

  switch (in.kind) {
    case K::spawned:
      if (m_state != LifeState::spawning || !current) return {};
      m_state = LifeState::initializing;
      if (m_restarting) return {{A::send_initialize, m_epoch}};
      return {};
    case K::spawn_failed:
      if (m_state != LifeState::spawning || !current) return {};
      m_state = LifeState::down;
      return {{A::wake}};
    case K::initialized:
      if (m_state != LifeState::initializing || !current) return {};
      m_state = LifeState::running;
      return {{A::wake}};
    case K::initialize_failed:
      if (m_state != LifeState::initializing || !current) return {};
      m_state = LifeState::down;
      return {{A::tear_down, m_epoch}, {A::wake}};
    case K::transport_ended:
      if ((m_state != LifeState::initializing && m_state != LifeState::running) || !current) return {};
      m_state = LifeState::down;
      return {{A::tear_down, m_epoch}, {A::wake}};
    case K::killed:
      if (m_state != LifeState::running && m_state != LifeState::initializing && m_state != LifeState::spawning) {
        return {};
      }
      m_state = LifeState::down;
      return {{A::tear_down, m_epoch},
              {A::fail_pending, m_epoch, {}, "transport closed: extension cancelled"},
              {A::wake}};
    case K::call_answered:
      if (m_state != LifeState::running || !current) return {};
      m_attempts = 0;
      m_timeouts = 0;
      m_unresponsive = false;
      return {};
    case K::call_timed_out: {
      if (m_state != LifeState::running || !current) return {};
      if (++m_timeouts < k_unresponsive_after_timeouts) return {};
      m_timeouts = 0;
      m_unresponsive = true;
      m_state = LifeState::down;
      std::vector<LifeAction> actions{
          {A::tear_down, m_epoch},
          {A::fail_pending, m_epoch, {},
           "Extension '" + m_id + "' is unresponsive: " + std::to_string(k_unresponsive_after_timeouts) +
               " calls in a row got no answer within their deadlines; restarting it"}};
      return restart(std::move(actions));
    }
    case K::restart_wanted:
      if (m_state != LifeState::down) return {};
      return restart({});
    case K::backoff_elapsed:
      if (m_state != LifeState::restarting || !current) return {};
      m_state = LifeState::spawning;
      ++m_epoch;
      m_restarting = true;
      return {{A::spawn, m_epoch}};
    case K::stop_requested:
    case K::stop_finished:
      return {};
  }
  return {};
}

}  // namespace exthost::runtime
