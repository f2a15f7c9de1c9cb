// HandoffQueue: a coroutine producer on an I/O thread, a plain consumer thread.
#include "host/handoff_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <thread>
#include <vector>

namespace exthost::host {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// An I/O thread of the test's own.
struct IoThread {
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~IoThread() {
    work.reset();
    io.stop();
    thread.join();
  }
};

TEST(HandoffQueue, AFullQueueHoldsTheProducerBackWithoutBlockingItsThread) {
  IoThread t;
  constexpr std::size_t k_capacity = 4;
  constexpr int k_items = 200;
  auto queue = std::make_shared<HandoffQueue<int>>(t.io.get_executor(), k_capacity);
  std::atomic<std::size_t> peak{0};
  auto produced = asio::co_spawn(
      t.io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < k_items; ++i) {
          EXPECT_TRUE(co_await queue->push(i));
          peak = std::max(peak.load(), queue->size());
        }
        queue->close();
      },
      asio::use_future);
  // Nobody consumes yet: the producer waits, and the I/O thread still runs other work.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(queue->size(), k_capacity);
  auto other = asio::post(t.io, asio::use_future([] { return 42; }));
  ASSERT_EQ(other.wait_for(2s), std::future_status::ready) << "the waiting producer blocked its thread";
  EXPECT_EQ(other.get(), 42);
  std::vector<int> taken;
  while (auto item = queue->pop()) {
    taken.push_back(*item);
    if (taken.size() % 50 == 0) std::this_thread::sleep_for(5ms);  // a slow consumer
  }
  ASSERT_EQ(produced.wait_for(2s), std::future_status::ready);
  ASSERT_EQ(taken.size(), static_cast<std::size_t>(k_items));
  for (int i = 0; i < k_items; ++i) EXPECT_EQ(taken[i], i);
  EXPECT_LE(peak.load(), k_capacity);
}

TEST(HandoffQueue, CloseLetsTheConsumerDrainFirst) {
  IoThread t;
  auto queue = std::make_shared<HandoffQueue<std::string>>(t.io.get_executor(), 2);
  EXPECT_TRUE(queue->push_now("a"));
  EXPECT_TRUE(queue->push_now("b"));
  EXPECT_TRUE(queue->push_now("c")) << "push_now ignores the capacity";
  queue->close();
  EXPECT_FALSE(queue->push_now("d"));
  EXPECT_EQ(queue->pop(), std::optional<std::string>("a"));
  EXPECT_EQ(queue->pop(), std::optional<std::string>("b"));
  EXPECT_EQ(queue->pop(), std::optional<std::string>("c"));
  EXPECT_EQ(queue->pop(), std::nullopt);
  EXPECT_EQ(queue->try_pop(), std::nullopt);
}

TEST(HandoffQueue, AbandoningReleasesAWaitingProducer) {
  IoThread t;
  auto queue = std::make_shared<HandoffQueue<int>>(t.io.get_executor(), 1);
  auto pushed = asio::co_spawn(
      t.io,
      [&]() -> asio::awaitable<std::vector<bool>> {
        std::vector<bool> r;
        r.push_back(co_await queue->push(1));
        r.push_back(co_await queue->push(2));  // waits: full
        co_return r;
      },
      asio::use_future);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(pushed.wait_for(0s), std::future_status::timeout);
  queue->abandon();
  ASSERT_EQ(pushed.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(pushed.get(), (std::vector<bool>{true, false}));
  EXPECT_EQ(queue->size(), 0u);
}

}  // namespace
}  // namespace exthost::host
