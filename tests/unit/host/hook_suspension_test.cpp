// When a hook subscription is suspended, probed and resumed, without a bus or a clock.
#include "host/hook_suspension.hpp"

#include <gtest/gtest.h>

namespace exthost::host {
namespace {

using Admission = HookSuspension::Admission;
using std::chrono::milliseconds;

class HookSuspensionRecord : public ::testing::Test {
 protected:
  // Asks and times out `n` times in a row.
  void time_out(int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(s.admit(t0), Admission::ask);
      s.timed_out(t0, false);
    }
  }
  HookSuspension s;
  const HookSuspension::time_point t0{std::chrono::hours(1)};
};

TEST_F(HookSuspensionRecord, TheNamedCountOfTimeoutsInARowSuspends) {
  time_out(static_cast<int>(k_hook_suspend_after_timeouts) - 1);
  EXPECT_FALSE(s.suspended());
  EXPECT_EQ(s.admit(t0), Admission::ask);
  EXPECT_TRUE(s.timed_out(t0, false));
  EXPECT_TRUE(s.suspended());
  EXPECT_EQ(s.until(), t0 + k_hook_suspend_interval);
  EXPECT_EQ(s.consecutive_timeouts(), k_hook_suspend_after_timeouts);
}

TEST_F(HookSuspensionRecord, AnAnswerResetsTheCount) {
  time_out(2);
  s.answered();
  time_out(2);
  EXPECT_FALSE(s.suspended());
  EXPECT_EQ(s.consecutive_timeouts(), 2u);
}

TEST_F(HookSuspensionRecord, OneProbeAfterTheIntervalAndOnlyOneAtATime) {
  time_out(3);
  EXPECT_EQ(s.admit(t0 + k_hook_suspend_interval - milliseconds(1)), Admission::skip);
  EXPECT_EQ(s.admit(t0 + k_hook_suspend_interval), Admission::probe);
  EXPECT_EQ(s.admit(t0 + k_hook_suspend_interval), Admission::skip);  // the probe is still out
}

TEST_F(HookSuspensionRecord, AFailedProbeSuspendsAgainFromItsOwnTime) {
  time_out(3);
  const auto later = t0 + k_hook_suspend_interval + milliseconds(7);
  ASSERT_EQ(s.admit(later), Admission::probe);
  EXPECT_TRUE(s.timed_out(later, true));
  EXPECT_EQ(s.until(), later + k_hook_suspend_interval);
  EXPECT_EQ(s.admit(later), Admission::skip);
}

TEST_F(HookSuspensionRecord, AnAnsweredProbeResumes) {
  time_out(3);
  ASSERT_EQ(s.admit(t0 + k_hook_suspend_interval), Admission::probe);
  s.answered();
  EXPECT_FALSE(s.suspended());
  EXPECT_EQ(s.until(), std::nullopt);
  EXPECT_EQ(s.consecutive_timeouts(), 0u);
  EXPECT_EQ(s.admit(t0 + k_hook_suspend_interval), Admission::ask);
}

TEST_F(HookSuspensionRecord, AnAbandonedProbeLetsTheNextEventProbe) {
  time_out(3);
  const auto later = t0 + k_hook_suspend_interval;
  ASSERT_EQ(s.admit(later), Admission::probe);
  s.probe_abandoned();
  EXPECT_TRUE(s.suspended());
  EXPECT_EQ(s.admit(later), Admission::probe);
}

TEST_F(HookSuspensionRecord, ALateTimeoutFromBeforeTheSuspensionDoesNotExtendIt) {
  // Four asks out at once; the fourth times out after the third suspended the subscription.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(s.admit(t0), Admission::ask);
  for (int i = 0; i < 3; ++i) s.timed_out(t0, false);
  EXPECT_FALSE(s.timed_out(t0 + milliseconds(500), false));
  EXPECT_EQ(s.until(), t0 + k_hook_suspend_interval);
}

TEST_F(HookSuspensionRecord, AProbeTimeoutAfterAnotherAnswerDoesNotSuspend) {
  // An ask from before the suspension answers while the probe is out: the subscription is
  // back, and the probe's own timeout counts as one timeout only.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(s.admit(t0), Admission::ask);
  for (int i = 0; i < 3; ++i) s.timed_out(t0, false);
  ASSERT_EQ(s.admit(t0 + k_hook_suspend_interval), Admission::probe);
  s.answered();
  EXPECT_FALSE(s.timed_out(t0 + k_hook_suspend_interval, true));
  EXPECT_FALSE(s.suspended());
  EXPECT_EQ(s.consecutive_timeouts(), 1u);
}

}  // namespace
}  // namespace exthost::host
