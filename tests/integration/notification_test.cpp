// Notification fan-out with real children: backpressure, pruning, idempotent unsubscribe,
// and the end of every subscription at EOF.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <csignal>

#include "../support/bounded.hpp"
#include "../support/fake_extension.hpp"
#include "runtime/process_extension.hpp"

namespace exthost {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using exthost::testing::run_bounded;
using exthost::testing::run_until;
using runtime::ProcessExtension;

class NotificationTest : public ::testing::Test {
 protected:
  void SetUp() override { std::signal(SIGPIPE, SIG_IGN); }
  std::shared_ptr<ProcessExtension> start(std::vector<std::string> args) {
    return exthost::testing::start_fake(io, std::move(args));
  }
  asio::io_context io;
};

TEST_F(NotificationTest, TheParkedBytesBudgetHoldsTheReaderBackBeforeTheFrameCountDoes) {
  // 6 × 3 MiB: two frames fit the 8 MiB budget, the third waits though the queue has room.
  constexpr int k_frames = 6;
  auto ext = start({"notify", std::to_string(k_frames), std::to_string(3u << 20)});
  ASSERT_TRUE(ext);
  auto sub = ext->subscribe_notifications();
  auto call = asio::co_spawn(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")),
                             asio::use_future);
  const auto& budget = ext->inbox().budget();
  ASSERT_TRUE(run_until(io, [&] { return budget.waits() >= 1; })) << "the reader never met the budget";
  run_until(io, [] { return false; }, std::chrono::milliseconds(200));
  EXPECT_EQ(sub.queue().size(), 2u) << "held back by bytes, with room for " << rpc::k_notification_queue_capacity << " frames";
  EXPECT_LE(budget.parked_bytes(), rpc::k_parked_bytes_budget);
  EXPECT_NE(call.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  // Drain: every frame arrives whole and in order; each one dropped frees its bytes.
  int next = 0;
  auto drain = [&]() -> asio::awaitable<void> {
    while (next < k_frames) {
      auto f = co_await sub.queue().pop();
      if (!f) co_return;
      EXPECT_EQ(f->params.as_object().at("index").as_int64(), next);
      EXPECT_EQ(f->params.as_object().at("pad").as_string().size(), 3u << 20);
      ++next;
    }
  };
  ASSERT_TRUE(run_bounded(io, drain()));
  EXPECT_EQ(next, k_frames);
  ASSERT_TRUE(run_until(io, [&] { return call.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  EXPECT_TRUE(call.get().ok());
  EXPECT_EQ(budget.parked_bytes(), 0u);
  EXPECT_EQ(budget.peak_frames(), 2u);
  EXPECT_GT(budget.peak_bytes(), 6u << 20);
  EXPECT_LE(budget.peak_bytes(), rpc::k_parked_bytes_budget);
  run_bounded(io, ext->shutdown());
}

TEST_F(NotificationTest, AFloodIsBackpressuredNotRetained) {
  auto ext = start({"notify", "100", "32768"});  // 100 × 32 KiB: far beyond queue and pipe
  ASSERT_TRUE(ext);
  auto sub = ext->subscribe_notifications();
  auto call = asio::co_spawn(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")),
                             asio::use_future);
  // Nobody drains: the reader must stop at the queue bound instead of buffering the flood.
  run_until(io, [&] { return sub.queue().size() == rpc::k_notification_queue_capacity; });
  run_until(io, [] { return false; }, std::chrono::milliseconds(300));
  EXPECT_EQ(sub.queue().size(), rpc::k_notification_queue_capacity);
  EXPECT_NE(call.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "the call completed while 92 notifications were still undrained";
  // Drain: every frame arrives, in order, and then the call completes.
  std::int64_t next = 0;
  auto drain = [&]() -> asio::awaitable<void> {
    while (next < 100) {
      auto f = co_await sub.queue().pop();
      if (!f) co_return;
      EXPECT_EQ(f->params.as_object().at("index").as_int64(), next);
      ++next;
    }
  };
  ASSERT_TRUE(run_bounded(io, drain()));
  EXPECT_EQ(next, 100);
  ASSERT_TRUE(run_until(io, [&] { return call.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  EXPECT_TRUE(call.get().ok());
  run_bounded(io, ext->shutdown());
}

TEST_F(NotificationTest, ADroppedSubscriberIsPrunedAndDoesNotBlockOthers) {
  auto ext = start({"notify", "30"});
  ASSERT_TRUE(ext);
  auto keeper = ext->subscribe_notifications();
  {
    auto dropped = ext->subscribe_notifications();
    EXPECT_EQ(ext->inbox().subscriber_count(), 2u);
  }  // gone without unsubscribing
  std::int64_t seen = 0;
  auto drain = [&]() -> asio::awaitable<void> {
    while (seen < 30) {
      if (!co_await keeper.queue().pop()) co_return;
      ++seen;
    }
  };
  auto both = [&]() -> asio::awaitable<Result<boost::json::value>> {
    co_return co_await (ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")) && drain());
  };
  auto r = run_bounded(io, both());
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(seen, 30);
  EXPECT_EQ(ext->inbox().subscriber_count(), 1u);
  run_bounded(io, ext->shutdown());
}

TEST_F(NotificationTest, UnsubscribeIsIdempotentAndLetsTheBufferDrain) {
  auto ext = start({"notify", "3"});
  ASSERT_TRUE(ext);
  auto sub = ext->subscribe_notifications();
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")));
  ASSERT_TRUE(r && r->ok());
  sub.unsubscribe();
  sub.unsubscribe();
  ext->inbox().unsubscribe(sub.id());
  EXPECT_EQ(ext->inbox().subscriber_count(), 0u);
  int drained = 0;
  while (sub.queue().try_pop()) ++drained;
  EXPECT_EQ(drained, 3);
  auto end = run_bounded(io, sub.queue().pop());
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->has_value()) << "an unsubscribed queue ends after its buffer";
  run_bounded(io, ext->shutdown());
}

TEST_F(NotificationTest, EofEndsEverySubscriptionAfterItsBuffer) {
  auto ext = start({"eof-on-call"});
  ASSERT_TRUE(ext);
  auto a = ext->subscribe_notifications();
  auto b = ext->subscribe_notifications();
  auto r = run_bounded(io, ext->call_no_spawn("tool.call", boost::json::parse(R"({"name":"echo","input":1})")));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(ext->inbox().subscriber_count(), 0u);
  EXPECT_TRUE(a.queue().closed());
  EXPECT_TRUE(b.queue().closed());
  auto end = run_bounded(io, a.queue().pop());
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->has_value());
  run_bounded(io, ext->shutdown());
}

TEST_F(NotificationTest, GenerationsAreEvenWhileLiveAndAllocationFailsClosed) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  EXPECT_EQ(ext->lifecycle_snapshot()->generation, 2u);
  ext->inbox().set_next_generation(UINT64_MAX - 1);
  auto exhausted = ext->inbox().install_lifecycle(nullptr);
  ASSERT_FALSE(exhausted.ok());
  EXPECT_EQ(exhausted.error().message, "extension lifecycle generation exhausted");
  EXPECT_EQ(ext->lifecycle_snapshot()->generation, 2u) << "a failed allocation leaves the live record alone";
  run_bounded(io, ext->shutdown());
}

TEST_F(NotificationTest, AContendedSnapshotIsUnavailableWithoutChangingTheGeneration) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  const auto before = ext->lifecycle_snapshot();
  ASSERT_TRUE(before);
  {
    std::lock_guard hold(ext->inbox().lifecycle_slot_mutex());
    EXPECT_EQ(ext->lifecycle_snapshot(), std::nullopt);
  }
  {
    std::lock_guard hold(ext->inbox().current_lifecycle()->child_mutex());
    EXPECT_EQ(ext->lifecycle_snapshot(), std::nullopt);
  }
  EXPECT_EQ(ext->lifecycle_snapshot(), before);
  run_bounded(io, ext->shutdown());
}

}  // namespace
}  // namespace exthost
