// The server's output writer: whole frames in order, a queue bounded by bytes, and a stop
// that abandons a client that reads nothing.
#include "serve/output_writer.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

namespace {

using exthost::server::k_output_queue_budget;
using exthost::server::OutputWriter;

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  // Reads until `n` bytes came or 10 s passed.
  std::string read_n(std::size_t n) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    char buf[65536];
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t got = ::read(fds[0], buf, std::min(sizeof buf, n - out.size()));
      if (got <= 0) break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
};

TEST(OutputWriter, WritesFramesWholeAndInOrder) {
  Pipe pipe;
  OutputWriter writer(pipe.fds[1], [] {});
  const std::string big(300 * 1024, 'b');
  EXPECT_TRUE(writer.push("one"));
  EXPECT_TRUE(writer.push(big));
  writer.push_now("three");
  EXPECT_EQ(pipe.read_n(3 + big.size() + 5), "one" + big + "three");
  writer.finish();
}

TEST(OutputWriter, AFullQueueHoldsProducersBackUntilTheClientReads) {
  Pipe pipe;
  std::atomic<int> rooms{0};
  OutputWriter writer(pipe.fds[1], [&] { ++rooms; });
  const std::string frame(1024 * 1024, 'f');
  std::size_t pushed = 0;
  while (writer.accepting()) {
    writer.push_now(frame);
    ++pushed;
  }
  EXPECT_GE(pushed * frame.size(), k_output_queue_budget);
  auto waiting = std::async(std::launch::async, [&] { return writer.push("last"); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "a producer waits while the queue is full";
  EXPECT_EQ(pipe.read_n(pushed * frame.size() + 4).size(), pushed * frame.size() + 4);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(waiting.get());
  EXPECT_GE(rooms.load(), 1) << "the reading side is told when there is room again";
  writer.finish();
}

TEST(OutputWriter, FinishingAbandonsAClientThatReadsNothing) {
  Pipe pipe;
  OutputWriter writer(pipe.fds[1], [] {});
  const std::string frame(1024 * 1024, 'f');
  while (writer.accepting()) writer.push_now(frame);
  auto finished = std::async(std::launch::async, [&] { writer.finish(std::chrono::milliseconds(100)); });
  ASSERT_EQ(finished.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_FALSE(writer.push("after")) << "the output is closed";
  EXPECT_TRUE(writer.accepting());
}

TEST(OutputWriter, AClosedOutputDropsFramesWithoutWaiting) {
  ::signal(SIGPIPE, SIG_IGN);  // as the Host does for the server: a closed pipe fails, not kills
  Pipe pipe;
  ::close(pipe.fds[0]);
  pipe.fds[0] = -1;
  OutputWriter writer(pipe.fds[1], [] {});
  writer.push_now("lost");
  auto pushed = std::async(std::launch::async, [&] {
    bool ok = true;
    for (int i = 0; i < 64 && ok; ++i) ok = writer.push(std::string(1024 * 1024, 'x'));
    return ok;
  });
  ASSERT_EQ(pushed.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_FALSE(pushed.get());
  writer.finish();
}

}  // namespace
