// The per-extension parked-bytes budget (SPEC A6) without I/O: admission, waiting, release.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "../../support/bounded.hpp"
#include "rpc/byte_budget.hpp"

namespace {

namespace asio = boost::asio;
using exthost::rpc::BudgetLease;
using exthost::rpc::ByteBudget;
using exthost::testing::run_bounded;
using exthost::testing::run_until;

TEST(ByteBudget, AdmitsUpToTheLimitThenWaitsForARelease) {
  asio::io_context io;
  auto budget = std::make_shared<ByteBudget>(io.get_executor(), 100);
  auto a = run_bounded(io, budget->acquire(60));
  auto b = run_bounded(io, budget->acquire(40));
  ASSERT_TRUE(a && *a && b && *b);
  EXPECT_EQ(budget->parked_bytes(), 100u) << "exactly the limit fits";
  auto third = asio::co_spawn(io, budget->acquire(1), asio::use_future);
  run_until(io, [] { return false; }, std::chrono::milliseconds(50));
  EXPECT_NE(third.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "one byte over the limit waits";
  EXPECT_EQ(budget->waits(), 1u);
  (*a)->release();
  ASSERT_TRUE(run_until(io, [&] { return third.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  auto lease = third.get();
  ASSERT_TRUE(lease);
  EXPECT_EQ(budget->parked_bytes(), 41u);
  EXPECT_EQ(budget->peak_bytes(), 100u);
  EXPECT_EQ(budget->peak_frames(), 2u);
}

TEST(ByteBudget, AFrameLargerThanTheBudgetPassesWhenNothingIsParked) {
  asio::io_context io;
  auto budget = std::make_shared<ByteBudget>(io.get_executor(), 100);
  auto big = run_bounded(io, budget->acquire(500));
  ASSERT_TRUE(big && *big) << "otherwise a frame above the budget would block the reader forever";
  EXPECT_EQ(budget->parked_bytes(), 500u);
}

TEST(ByteBudget, ALeaseReleasesOnceWhenMovedAndDestroyed) {
  asio::io_context io;
  auto budget = std::make_shared<ByteBudget>(io.get_executor(), 100);
  {
    auto lease = run_bounded(io, budget->acquire(30));
    ASSERT_TRUE(lease && *lease);
    BudgetLease moved = std::move(**lease);
    BudgetLease again;
    again = std::move(moved);
    EXPECT_EQ(budget->parked_bytes(), 30u);
  }
  EXPECT_EQ(budget->parked_bytes(), 0u);
  EXPECT_EQ(budget->parked_frames(), 0u);
}

}  // namespace
