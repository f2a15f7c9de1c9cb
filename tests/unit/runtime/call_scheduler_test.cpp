// The call scheduler: the declared limit, hooks ahead of queued calls, exclusive holds, and
// waiters that give up.
#include "runtime/call_scheduler.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using exthost::runtime::CallScheduler;
using Lane = CallScheduler::Lane;

struct Fixture {
  asio::io_context io;
  CallScheduler scheduler{io.get_executor()};
  std::vector<std::string> admitted;
  std::vector<std::optional<CallScheduler::Slot>> slots = std::vector<std::optional<CallScheduler::Slot>>(16);

  void admit(Lane lane, std::string name, std::size_t index) {
    asio::co_spawn(
        io,
        [](Fixture* f, Lane l, std::string n, std::size_t i) -> asio::awaitable<void> {
          auto slot = co_await f->scheduler.admit(l);
          if (!slot) co_return;
          f->admitted.push_back(n);
          f->slots[i].emplace(std::move(slot));
        }(this, lane, std::move(name), index),
        asio::detached);
  }
  void settle() {
    io.restart();
    io.poll();
  }
  // Lets every waiter in and ends it before the scheduler goes: a coroutine left waiting
  // would otherwise be destroyed by the io_context after the scheduler it waits in.
  ~Fixture() {
    scheduler.set_limit(exthost::protocol::k_max_concurrency);
    settle();
    slots.clear();
    settle();
  }
};

TEST(CallScheduler, AtTheDefaultLimitNothingIsHeldBackAndOrderIsKept) {
  Fixture f;
  for (std::size_t i = 0; i < 5; ++i) f.admit(Lane::normal, "c" + std::to_string(i), i);
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"c0", "c1", "c2", "c3", "c4"}));
  EXPECT_EQ(f.scheduler.in_flight(), 5u);
  // Only the first reached an idle child: the others were queued behind it in the pipe.
  EXPECT_TRUE(f.slots[0]->reached_idle_child());
  EXPECT_FALSE(f.slots[1]->reached_idle_child());
}

TEST(CallScheduler, AboveOneAtMostTheLimitIsInFlightAndAHookGoesAheadOfQueuedCalls) {
  Fixture f;
  f.scheduler.set_limit(2);
  f.admit(Lane::normal, "a", 0);
  f.admit(Lane::normal, "b", 1);
  f.admit(Lane::normal, "c", 2);
  f.admit(Lane::normal, "d", 3);
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a", "b"}));
  f.admit(Lane::hook, "hook", 4);
  f.settle();
  EXPECT_EQ(f.admitted.size(), 2u) << "the hook waits for a free place too";
  f.slots[0].reset();  // a answered
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a", "b", "hook"}));
  f.slots[1].reset();
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a", "b", "hook", "c"}));
  EXPECT_EQ(f.scheduler.in_flight(), 2u);
}

// A declared limit of 1 is a limit, not the undeclared pass-through: the rest wait in the
// host, a hook goes first, and every admitted request reached an idle child.
TEST(CallScheduler, ADeclaredLimitOfOneHoldsTheRestBackAndAHookGoesFirst) {
  Fixture f;
  f.scheduler.set_limit(1, true);
  f.admit(Lane::normal, "a", 0);
  f.admit(Lane::normal, "b", 1);
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a"}));
  f.admit(Lane::hook, "hook", 2);
  f.settle();
  f.slots[0].reset();
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a", "hook"}));
  EXPECT_TRUE(f.slots[2]->reached_idle_child());
  f.slots[2].reset();
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a", "hook", "b"}));
  EXPECT_EQ(f.scheduler.in_flight(), 1u);
}

TEST(CallScheduler, UndeclaredIgnoresTheLimitGiven) {
  Fixture f;
  f.scheduler.set_limit(1, false);
  for (std::size_t i = 0; i < 3; ++i) f.admit(Lane::normal, "c" + std::to_string(i), i);
  f.settle();
  EXPECT_EQ(f.scheduler.in_flight(), 3u);
  EXPECT_FALSE(f.scheduler.bounded());
}

TEST(CallScheduler, ExclusiveWaitsForEveryoneAndHoldsTheRestBack) {
  Fixture f;
  f.admit(Lane::normal, "a", 0);
  f.settle();
  std::optional<CallScheduler::Slot> held;
  asio::co_spawn(
      f.io, [&]() -> asio::awaitable<void> { held.emplace(co_await f.scheduler.exclusive()); }, asio::detached);
  f.settle();
  EXPECT_FALSE(held) << "a request is in flight";
  f.admit(Lane::normal, "b", 1);
  f.settle();
  EXPECT_EQ(f.admitted.size(), 1u) << "nobody overtakes a waiting exclusive hold";
  f.slots[0].reset();
  f.settle();
  ASSERT_TRUE(held && *held);
  EXPECT_EQ(f.admitted.size(), 1u);
  held.reset();
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a", "b"}));
}

TEST(CallScheduler, AWaiterThatGivesUpLeavesItsLaneAndTheNextOneGoes) {
  using namespace asio::experimental::awaitable_operators;
  Fixture f;
  f.scheduler.set_limit(2);
  f.admit(Lane::normal, "a", 0);
  f.admit(Lane::normal, "b", 1);
  bool gave_up = false;
  asio::co_spawn(
      f.io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer deadline(f.io, std::chrono::milliseconds(1));
        auto r = co_await (f.scheduler.admit(Lane::normal) || deadline.async_wait(asio::use_awaitable));
        gave_up = r.index() == 1;
      },
      asio::detached);
  f.admit(Lane::normal, "c", 2);
  f.settle();
  f.io.restart();
  f.io.run_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(gave_up);
  EXPECT_EQ(f.scheduler.waiting(), 1u);
  f.slots[0].reset();
  f.settle();
  EXPECT_EQ(f.admitted, (std::vector<std::string>{"a", "b", "c"})) << "c is next once the waiter ahead left";
}

}  // namespace
