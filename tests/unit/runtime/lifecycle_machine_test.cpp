// The lifecycle machine without processes: named orders of inputs from the findings, then
// every order of inputs up to a depth, checked against the machine's promises.
#include "runtime/lifecycle_machine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>
#include <tuple>

namespace exthost::runtime {
namespace {

using K = LifeInput::Kind;
using A = LifeAction::Kind;

bool has(const std::vector<LifeAction>& actions, A kind) {
  return std::any_of(actions.begin(), actions.end(), [&](const LifeAction& a) { return a.kind == kind; });
}

RestartPolicy policy(std::uint32_t attempts = 3) {
  RestartPolicy p;
  p.max_attempts = attempts;
  return p;
}

// Brings a fresh machine to running with its first child.
LifecycleMachine running_machine(std::uint32_t attempts = 3) {
  LifecycleMachine m(policy(attempts), "x");
  m.handle({K::spawned, 1});
  m.handle({K::initialized, 1});
  EXPECT_EQ(m.state(), LifeState::running);
  return m;
}

TEST(LifecycleMachine, LoadSpawnsInitializesAndRuns) {
  LifecycleMachine m(policy(), "x");
  EXPECT_EQ(m.state(), LifeState::spawning);
  EXPECT_TRUE(m.handle({K::spawned, 1}).empty()) << "a load sends its own initialize";
  EXPECT_EQ(m.state(), LifeState::initializing);
  EXPECT_TRUE(has(m.handle({K::initialized, 1}), A::wake));
  EXPECT_EQ(m.state(), LifeState::running);
}

TEST(LifecycleMachine, ATransportFailureRestartsWithBackoffThenSpawnsAndInitializesTheNextEpoch) {
  auto m = running_machine();
  auto ended = m.handle({K::transport_ended, 1});
  EXPECT_TRUE(has(ended, A::tear_down));
  EXPECT_EQ(m.state(), LifeState::down);
  auto wanted = m.handle({K::restart_wanted});
  ASSERT_TRUE(has(wanted, A::start_backoff));
  EXPECT_EQ(wanted.front().delay, std::chrono::milliseconds(250));
  EXPECT_EQ(m.state(), LifeState::restarting);
  EXPECT_TRUE(m.handle({K::restart_wanted}).empty()) << "one restart at a time";
  auto elapsed = m.handle({K::backoff_elapsed, 1});
  ASSERT_EQ(elapsed.size(), 1u);
  EXPECT_EQ(elapsed.front().kind, A::spawn);
  EXPECT_EQ(elapsed.front().epoch, 2u);
  auto spawned = m.handle({K::spawned, 2});
  ASSERT_TRUE(has(spawned, A::send_initialize)) << "a restarted child is handshaken by the machine's shell";
  m.handle({K::initialized, 2});
  EXPECT_EQ(m.state(), LifeState::running);
  EXPECT_EQ(m.total_restarts(), 1u);
  EXPECT_EQ(m.consecutive_restarts(), 1u);
  m.handle({K::call_answered, 2});
  EXPECT_EQ(m.consecutive_restarts(), 0u) << "a served call makes the budget whole";
}

TEST(LifecycleMachine, ShutdownDuringTheFirstSpawnTearsTheChildDownWhenItArrives) {
  LifecycleMachine m(policy(), "x");
  EXPECT_TRUE(has(m.handle({K::stop_requested}), A::invalidate));
  auto spawned = m.handle({K::spawned, 1});
  EXPECT_TRUE(has(spawned, A::tear_down));
  EXPECT_FALSE(has(spawned, A::send_initialize));
  m.handle({K::stop_finished});
  EXPECT_EQ(m.state(), LifeState::stopped);
}

TEST(LifecycleMachine, ShutdownDuringInitializeIgnoresTheLateAnswer) {
  LifecycleMachine m(policy(), "x");
  m.handle({K::spawned, 1});
  m.handle({K::stop_requested});
  EXPECT_TRUE(m.handle({K::initialized, 1}).empty());
  EXPECT_EQ(m.state(), LifeState::stopping) << "a late answer never makes a stopping extension run";
}

TEST(LifecycleMachine, ShutdownDuringBackoffCancelsItAndNothingIsSpawnedAfter) {
  auto m = running_machine();
  m.handle({K::transport_ended, 1});
  m.handle({K::restart_wanted});
  auto stop = m.handle({K::stop_requested});
  EXPECT_TRUE(has(stop, A::cancel_backoff));
  EXPECT_TRUE(m.handle({K::backoff_elapsed, 1}).empty()) << "the respawn after unload (finding 2)";
  EXPECT_TRUE(m.handle({K::restart_wanted}).empty());
}

TEST(LifecycleMachine, ShutdownDuringARestartInitializeNeverRuns) {
  auto m = running_machine();
  m.handle({K::transport_ended, 1});
  m.handle({K::restart_wanted});
  m.handle({K::backoff_elapsed, 1});
  m.handle({K::spawned, 2});
  m.handle({K::stop_requested});
  EXPECT_TRUE(m.handle({K::initialized, 2}).empty());
  EXPECT_TRUE(m.handle({K::initialize_failed, 2}).empty());
  EXPECT_EQ(m.state(), LifeState::stopping);
}

TEST(LifecycleMachine, ReloadDuringACrashLoopStopsTheLoop) {
  auto m = running_machine();
  for (std::uint64_t e = 1; e < 3; ++e) {
    m.handle({K::transport_ended, e});
    m.handle({K::restart_wanted});
    m.handle({K::backoff_elapsed, e});
    m.handle({K::spawned, e + 1});
  }
  m.handle({K::stop_requested});
  for (auto kind : {K::initialize_failed, K::transport_ended, K::restart_wanted, K::backoff_elapsed}) {
    auto actions = m.handle({kind, m.epoch()});
    EXPECT_FALSE(has(actions, A::spawn));
  }
}

TEST(LifecycleMachine, AnEofRacingAReplyActsOnce) {
  auto m = running_machine();
  m.handle({K::transport_ended, 1});
  EXPECT_TRUE(m.handle({K::call_answered, 1}).empty()) << "the reply came from a child already down";
  EXPECT_EQ(m.state(), LifeState::down);
  auto n = running_machine();
  n.handle({K::call_answered, 1});
  EXPECT_TRUE(has(n.handle({K::transport_ended, 1}), A::tear_down));
  EXPECT_TRUE(n.handle({K::transport_ended, 1}).empty()) << "the second report of the same end is ignored";
}

TEST(LifecycleMachine, ExhaustionFailsAndSpawnsNothing) {
  LifecycleMachine m = running_machine(2);
  for (std::uint64_t e = 1; e <= 2; ++e) {
    m.handle({K::transport_ended, e});
    m.handle({K::restart_wanted});
    m.handle({K::backoff_elapsed, e});
    m.handle({K::spawned, e + 1});
    m.handle({K::initialize_failed, e + 1});
  }
  EXPECT_EQ(m.state(), LifeState::down);
  auto last = m.handle({K::restart_wanted});
  EXPECT_EQ(m.state(), LifeState::failed);
  EXPECT_FALSE(has(last, A::start_backoff));
  EXPECT_TRUE(m.handle({K::restart_wanted}).empty());
  // The refused third restart is not counted: the counts never pass the limit of 2.
  EXPECT_EQ(m.total_restarts(), 2u);
  EXPECT_EQ(m.consecutive_restarts(), 2u);
}

TEST(LifecycleMachine, TimeoutsInARowMakeItUnresponsiveAndRestartIt) {
  auto m = running_machine();
  m.handle({K::call_timed_out, 1});
  m.handle({K::call_answered, 1});
  for (std::uint32_t i = 1; i < k_unresponsive_after_timeouts; ++i) EXPECT_TRUE(m.handle({K::call_timed_out, 1}).empty());
  EXPECT_EQ(m.state(), LifeState::running) << "an answer in between resets the count";
  auto last = m.handle({K::call_timed_out, 1});
  EXPECT_TRUE(has(last, A::tear_down));
  EXPECT_TRUE(has(last, A::fail_pending));
  EXPECT_TRUE(has(last, A::start_backoff));
  EXPECT_TRUE(m.unresponsive());
  EXPECT_EQ(m.state(), LifeState::restarting);
  EXPECT_TRUE(m.handle({K::call_timed_out, 1}).empty()) << "a stale timeout counts for nothing";
}

TEST(LifecycleMachine, KilledIsNotTerminal) {
  auto m = running_machine();
  auto killed = m.handle({K::killed});
  EXPECT_TRUE(has(killed, A::tear_down));
  EXPECT_EQ(m.state(), LifeState::down);
  EXPECT_TRUE(has(m.handle({K::restart_wanted}), A::start_backoff));
}

// --- every order of inputs ------------------------------------------------------------------

struct Explored {
  LifecycleMachine machine;
  bool stop_seen = false;
  std::uint64_t highest_spawned = 1;
  bool backoff_pending = false;  // a start_backoff not yet followed by its elapse or a stop
  std::uint32_t spawns_since_answer = 0;
};

using Key = std::tuple<int, std::uint64_t, std::uint32_t, std::uint32_t, bool, bool, bool, std::uint32_t>;
Key key_of(const Explored& e) {
  return {static_cast<int>(e.machine.state()), e.machine.epoch(), e.machine.consecutive_restarts(),
          e.machine.consecutive_timeouts(), e.machine.unresponsive(), e.stop_seen, e.backoff_pending,
          e.spawns_since_answer};
}

TEST(LifecycleMachine, EveryOrderOfInputsKeepsThePromises) {
  constexpr std::uint32_t k_attempts = 2;
  constexpr std::size_t k_depth = 14;
  const std::vector<K> kinds{K::spawned,        K::spawn_failed,   K::initialized,    K::initialize_failed,
                             K::transport_ended, K::call_answered,  K::call_timed_out, K::killed,
                             K::restart_wanted,  K::backoff_elapsed, K::stop_requested, K::stop_finished};
  std::deque<std::pair<Explored, std::size_t>> frontier;
  frontier.push_back({Explored{LifecycleMachine(policy(k_attempts), "x")}, 0});
  std::set<Key> seen{key_of(frontier.front().first)};
  std::size_t transitions = 0;
  std::set<LifeState> reached;
  while (!frontier.empty()) {
    auto [node, depth] = std::move(frontier.front());
    frontier.pop_front();
    reached.insert(node.machine.state());
    if (depth == k_depth) continue;
    for (K kind : kinds) {
      const std::uint64_t current = node.machine.epoch();
      for (std::uint64_t epoch : {current, current - 1, current + 1}) {
        Explored next = node;
        const LifeState before = next.machine.state();
        auto actions = next.machine.handle({kind, epoch});
        ++transitions;
        const bool epoch_input = kind != K::killed && kind != K::restart_wanted && kind != K::stop_requested &&
                                 kind != K::stop_finished;
        if (epoch_input && epoch != current) {
          EXPECT_TRUE(actions.empty()) << "an input about another child acts on nothing";
        }
        if (kind == K::stop_requested) next.stop_seen = true;
        for (const auto& a : actions) {
          if (a.kind == A::spawn || a.kind == A::send_initialize) {
            EXPECT_FALSE(next.stop_seen) << "nothing is spawned or handshaken once a stop was asked";
          }
          if (a.kind == A::spawn) {
            EXPECT_EQ(a.epoch, next.highest_spawned + 1) << "epochs only grow, one at a time";
            next.highest_spawned = a.epoch;
            ++next.spawns_since_answer;
            EXPECT_LE(next.spawns_since_answer, k_attempts) << "no more restarts than the budget";
          }
          if (a.kind == A::tear_down) {
            EXPECT_EQ(a.epoch, current) << "only the current child is torn down";
          }
          if (a.kind == A::start_backoff) {
            EXPECT_FALSE(next.backoff_pending) << "one restart at a time";
            next.backoff_pending = true;
          }
        }
        if ((kind == K::backoff_elapsed && epoch == current) || kind == K::stop_requested) next.backoff_pending = false;
        if (kind == K::call_answered && before == LifeState::running && epoch == current) next.spawns_since_answer = 0;
        if (before == LifeState::stopped) {
          EXPECT_TRUE(actions.empty()) << "stopped is terminal";
        }
        if (next.stop_seen) {
          EXPECT_TRUE(next.machine.state() == LifeState::stopping || next.machine.state() == LifeState::stopped);
        }
        if (seen.insert(key_of(next)).second) frontier.push_back({std::move(next), depth + 1});
      }
    }
  }
  EXPECT_GT(transitions, 1000u);
  for (auto s : {LifeState::spawning, LifeState::initializing, LifeState::running, LifeState::down,
                 LifeState::restarting, LifeState::stopping, LifeState::stopped, LifeState::failed}) {
    EXPECT_TRUE(reached.count(s)) << "state " << to_string(s) << " was explored";
  }
}

}  // namespace
}  // namespace exthost::runtime
