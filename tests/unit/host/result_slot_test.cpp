// ResultSlot and ResultSetter: one result from one thread to the one waiting for it.
#include "host/result_slot.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "../../support/within.hpp"

namespace exthost::host {
namespace {

using namespace std::chrono_literals;
using exthost::testing::finishes_within;

auto abandoned() {
  return [] { return std::string("abandoned"); };
}
using Setter = ResultSetter<std::string, decltype(abandoned())>;

// What a waiting thread saw; shared, so a thread left behind by a failed bound keeps it.
struct Waited {
  std::shared_ptr<ResultSlot<std::string>> slot = std::make_shared<ResultSlot<std::string>>();
  std::atomic<bool> taken{false};
  std::string value;
};

// Starts a thread that takes the slot's value.
void start_waiter(const std::shared_ptr<Waited>& w) {
  std::thread([w] {
    w->value = w->slot->take();
    w->taken = true;
  }).detach();
}

TEST(ResultSlot, AValueSetBeforeTheWaitIsTakenAtOnce) {
  auto slot = std::make_shared<ResultSlot<std::string>>();
  Setter setter(slot, abandoned());
  setter("ready");
  EXPECT_EQ(slot->take(), "ready");
}

TEST(ResultSlot, AWaiterThatWentToSleepIsWokenBySet) {
  auto w = std::make_shared<Waited>();
  start_waiter(w);
  std::this_thread::sleep_for(100ms);  // far longer than the waiter spins: it sleeps by now
  EXPECT_FALSE(w->taken.load());
  Setter setter(w->slot, abandoned());
  setter("late");
  ASSERT_TRUE(exthost::testing::eventually([&] { return w->taken.load(); }, 10s)) << "the sleeping waiter was not woken";
  EXPECT_EQ(w->value, "late");
}

TEST(ResultSlot, ASetterDroppedUnsetGivesTheAbandonedValue) {
  auto w = std::make_shared<Waited>();
  start_waiter(w);
  std::this_thread::sleep_for(50ms);
  { Setter dropped(w->slot, abandoned()); }
  ASSERT_TRUE(exthost::testing::eventually([&] { return w->taken.load(); }, 10s)) << "the waiter still waits";
  EXPECT_EQ(w->value, "abandoned");
}

TEST(ResultSlot, AMovedFromSetterSetsNothingWhenDropped) {
  auto slot = std::make_shared<ResultSlot<std::string>>();
  {
    Setter setter(slot, abandoned());
    auto moved = std::move(setter);
    moved("value");
  }  // both dropped: neither sets "abandoned" over the value
  EXPECT_EQ(slot->take(), "value");
}

TEST(ResultSlot, TheSetterMayOutliveTheWaiter) {
  auto w = std::make_shared<Waited>();
  Setter setter(w->slot, abandoned());
  std::thread([w] {
    w->value = w->slot->take();
    w->slot.reset();  // the waiter lets go while the setter may still be notifying
    w->taken = true;
  }).detach();
  setter("value");
  ASSERT_TRUE(exthost::testing::eventually([&] { return w->taken.load(); }, 10s));
  EXPECT_EQ(w->value, "value");
}

// Many hand-offs in a row, to a waiter that is sometimes still spinning and sometimes
// asleep: every value arrives, once, in order.
TEST(ResultSlot, ManyHandOffsInARowEachDeliverTheirValue) {
  constexpr int k_rounds = 5000;
  struct State {
    std::atomic<std::shared_ptr<ResultSlot<int>>*> next{nullptr};
    std::atomic<int> received{0};
    std::atomic<bool> in_order{true};
  };
  auto state = std::make_shared<State>();
  const bool finished = finishes_within(60s, [state] {
    std::thread setter_thread([state] {
      auto noop = [] { return -1; };
      for (int i = 0; i < k_rounds; ++i) {
        std::shared_ptr<ResultSlot<int>>* slot = nullptr;
        while ((slot = state->next.exchange(nullptr)) == nullptr) std::this_thread::yield();
        ResultSetter<int, decltype(noop)> setter(*slot, noop);  // a copy, before the value is set
        if (i % 64 == 0) std::this_thread::sleep_for(200us);    // now and then the waiter sleeps
        setter(i);
      }
    });
    for (int i = 0; i < k_rounds; ++i) {
      auto slot = std::make_shared<ResultSlot<int>>();
      state->next = &slot;
      if (slot->take() != i) state->in_order = false;
      ++state->received;
    }
    setter_thread.join();
  });
  ASSERT_TRUE(finished) << "a hand-off was lost";
  EXPECT_EQ(state->received.load(), k_rounds);
  EXPECT_TRUE(state->in_order.load());
}

}  // namespace
}  // namespace exthost::host
