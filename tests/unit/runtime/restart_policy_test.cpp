#include "runtime/restart_policy.hpp"

#include <gtest/gtest.h>

namespace exthost::runtime {
namespace {

using std::chrono::milliseconds;

TEST(RestartPolicy, DefaultsAreThreeAttemptsDoublingFrom250ms) {
  RestartPolicy p;
  EXPECT_EQ(p.max_attempts, 3u);
  EXPECT_EQ(p.delay_for_attempt(0), std::nullopt);
  EXPECT_EQ(p.delay_for_attempt(1), milliseconds(250));
  EXPECT_EQ(p.delay_for_attempt(2), milliseconds(500));
  EXPECT_EQ(p.delay_for_attempt(3), milliseconds(1000));
  EXPECT_EQ(p.delay_for_attempt(4), std::nullopt);
}

TEST(RestartPolicy, DelayIsCappedAtTheMaximum) {
  RestartPolicy p{5, milliseconds(1000), milliseconds(2000), 10.0};
  EXPECT_EQ(p.delay_for_attempt(2), milliseconds(2000));
  RestartPolicy q{5, milliseconds(100), milliseconds(5000), 3.0};
  EXPECT_EQ(q.delay_for_attempt(3), milliseconds(900));
}

}  // namespace
}  // namespace exthost::runtime
