// join_all: all, some, and completions that race the bound in one reactor pass.
#include "rpc/join_all.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <stdexcept>

namespace exthost::rpc {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> sleep_until(asio::steady_timer::time_point when, int* done) {
  asio::steady_timer t(co_await asio::this_coro::executor, when);
  co_await t.async_wait(asio::use_awaitable);
  ++*done;
}

asio::awaitable<void> throws() {
  throw std::runtime_error("boom");
  co_return;
}

bool run(asio::io_context& io, asio::awaitable<bool> op) {
  auto f = asio::co_spawn(io, std::move(op), asio::use_future);
  io.run_for(10s);
  io.restart();
  EXPECT_EQ(f.wait_for(0s), std::future_status::ready);
  return f.get();
}

TEST(JoinAll, WaitsForEveryTaskWithinTheBound) {
  asio::io_context io;
  int done = 0;
  std::vector<asio::awaitable<void>> ops;
  for (int i = 0; i < 3; ++i) ops.push_back(sleep_until(asio::steady_timer::clock_type::now() + 10ms * i, &done));
  EXPECT_TRUE(run(io, join_all(io.get_executor(), std::move(ops), 5s)));
  EXPECT_EQ(done, 3);
}

TEST(JoinAll, ReturnsFalseAtTheBoundAndLetsTheLateTaskFinish) {
  asio::io_context io;
  int done = 0;
  std::vector<asio::awaitable<void>> ops;
  ops.push_back(sleep_until(asio::steady_timer::clock_type::now(), &done));
  ops.push_back(sleep_until(asio::steady_timer::clock_type::now() + 300ms, &done));
  auto f = asio::co_spawn(io, join_all(io.get_executor(), std::move(ops), 50ms), asio::use_future);
  io.run_for(10s);
  ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
  EXPECT_FALSE(f.get());
  EXPECT_EQ(done, 2) << "the late task still ran to its end";
}

TEST(JoinAll, AThrowingTaskCountsAsFinished) {
  asio::io_context io;
  std::vector<asio::awaitable<void>> ops;
  ops.push_back(throws());
  EXPECT_TRUE(run(io, join_all(io.get_executor(), std::move(ops), 5s)));
}

// The tasks and the bound expire at the same instant, so their handlers run in one reactor
// pass in either order. The bound's handler used to write a flag in the joining
// coroutine's frame, which may already be gone: AddressSanitizer reported a use after free.
TEST(JoinAll, CompletionsRacingTheBoundInOnePassTouchNoFreedFrame) {
  for (int round = 0; round < 200; ++round) {
    asio::io_context io;
    int done = 0;
    const auto when = asio::steady_timer::clock_type::now() + 2ms;
    std::vector<asio::awaitable<void>> ops;
    for (int i = 0; i < 4; ++i) ops.push_back(sleep_until(when, &done));
    auto joined = [&]() -> asio::awaitable<bool> {
      co_return co_await join_all(co_await asio::this_coro::executor, std::move(ops),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(
                                      when - asio::steady_timer::clock_type::now()));
    };
    auto f = asio::co_spawn(io, joined(), asio::use_future);
    io.run_for(5s);
    ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
    (void)f.get();
    EXPECT_EQ(done, 4);
  }
}

}  // namespace
}  // namespace exthost::rpc
