// The host's run loop and callback thread survive handlers that throw.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "host/callback_thread.hpp"
#include "host/run_loop.hpp"

namespace exthost::host {
namespace {

using namespace std::chrono_literals;

TEST(RunSurviving, AThrowingHandlerIsSkippedAndTheNextOnesRun) {
  boost::asio::io_context io;
  std::vector<int> ran;
  boost::asio::post(io, [&] { ran.push_back(1); });
  boost::asio::post(io, [] { throw std::runtime_error("handler bug"); });
  boost::asio::post(io, [] { throw 7; });  // not even a std::exception
  boost::asio::post(io, [&] { ran.push_back(2); });
  run_surviving(io, "test thread");  // returns once out of work
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

TEST(CallbackThread, RunsJobsInOrderOnOneThreadPastOneThatThrows) {
  CallbackThread callbacks;
  std::vector<int> ran;  // touched by the callback thread only, read after join
  std::thread::id first, last;
  callbacks.post("first", [&] {
    first = std::this_thread::get_id();
    ran.push_back(1);
  });
  callbacks.post("a broken callback", [] { throw std::runtime_error("embedder bug"); });
  for (int i = 2; i <= 50; ++i) callbacks.post("job", [&ran, i] { ran.push_back(i); });
  std::promise<bool> inside;
  callbacks.post("last", [&] {
    last = std::this_thread::get_id();
    inside.set_value(callbacks.running_in_this_thread());
  });
  auto f = inside.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(f.get());
  EXPECT_FALSE(callbacks.running_in_this_thread());
  callbacks.join();
  ASSERT_EQ(ran.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(ran[i], i + 1);
  EXPECT_EQ(first, last);
  EXPECT_NE(first, std::this_thread::get_id());
}

TEST(CallbackThread, JoinRunsWhatIsAlreadyPosted) {
  CallbackThread callbacks;
  int ran = 0;
  for (int i = 0; i < 10; ++i) {
    callbacks.post("job", [&ran] {
      std::this_thread::sleep_for(1ms);
      ++ran;
    });
  }
  callbacks.join();
  EXPECT_EQ(ran, 10);
  callbacks.join();  // idempotent
}

}  // namespace
}  // namespace exthost::host
