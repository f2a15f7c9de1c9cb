// Integration tests of the connection to one real child (the fake extension): the bytes
// queued to its stdin, and what ends its transport from the host's side.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/object.hpp>
#include <algorithm>
#include <csignal>
#include <future>
#include <stdexcept>

#include "../support/bounded.hpp"
#include "process/child.hpp"
#include "process/environment.hpp"
#include "rpc/connection.hpp"
#include "rpc/inbox.hpp"

namespace exthost {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using exthost::testing::run_bounded;
using exthost::testing::run_until;

template <class T>
bool ready(const std::future<T>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override { std::signal(SIGPIPE, SIG_IGN); }

  void TearDown() override {
    if (!connection) return;
    connection->stop();
    connection->child()->kill_group();
    auto child = connection->child();
    connection.reset();
    run_until(io, [&] { return child->reaped(); });
  }

  // Spawns the fake extension in `args`' mode and connects to it as extension "conn".
  void connect(std::vector<std::string> args) {
    process::SpawnSpec spec;
    spec.extension_id = "conn";
    spec.program = EXTHOST_FAKE_EXTENSION;
    spec.args = std::move(args);
    spec.environment = process::allowed_environment();
    auto child = process::Child::spawn(io.get_executor(), spec);
    ASSERT_TRUE(child) << child.error().message;
    inbox = std::make_shared<rpc::Inbox>(io.get_executor(), "conn");
    auto lifecycle = inbox->install_lifecycle((*child)->exit_probe());
    ASSERT_TRUE(lifecycle);
    connection = rpc::Connection::start(inbox, *child, *lifecycle);
  }

  // A "tool.call" of the echo tool with `pad` bytes of input.
  static boost::json::object echo_params(std::size_t pad) {
    boost::json::object input;
    input["pad"] = std::string(pad, 'p');
    boost::json::object params;
    params["name"] = "echo";
    params["input"] = std::move(input);
    return params;
  }

  template <class T>
  std::future<T> spawn(asio::awaitable<T> op) {
    return asio::co_spawn(io, std::move(op), asio::use_future);
  }

  asio::io_context io;
  std::shared_ptr<rpc::Inbox> inbox;
  std::shared_ptr<rpc::Connection> connection;
};

TEST_F(ConnectionTest, AChildThatReadsNothingHoldsTheWriteQueueAtItsBudgetThenEndsAtACallsDeadline) {
  connect({"deaf"});
  // A request that fits in the pipe: written at once, never answered.
  const boost::json::value no_params;  // outlives the coroutines that refer to it
  auto pending = spawn(connection->call("pending", no_params, 1));
  // Host notifications far past the budget: the pipe fills, then the queue up to its budget;
  // the rest wait for room instead of growing it.
  const boost::json::value pad = boost::json::object{{"pad", std::string(1 << 20, 'n')}};
  std::vector<std::future<Result<void>>> notes;
  for (int i = 0; i < 16; ++i) notes.push_back(spawn(connection->notify("test.pad", pad)));
  ASSERT_TRUE(run_until(io, [&] { return connection->queued_bytes() >= rpc::k_write_queue_budget - (1 << 20); }));
  for (int i = 0; i < 50; ++i) {  // whatever is ready runs; the child takes nothing, so the rest stays
    io.restart();
    io.poll();
  }
  EXPECT_LE(connection->queued_bytes(), rpc::k_write_queue_budget);
  EXPECT_FALSE(ready(notes.back())) << "waits for room";
  EXPECT_FALSE(ready(pending));

  // A call that cannot be queued waits for room until its deadline; the child took nothing
  // meanwhile, so its transport ends and every waiter learns why.
  asio::steady_timer deadline(io, std::chrono::milliseconds(200));
  auto raced = run_bounded(io, connection->call("tool.call", echo_params(16), 2) ||
                                   deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  ASSERT_TRUE(raced);
  EXPECT_EQ(raced->index(), 1u);
  ASSERT_TRUE(run_until(io, [&] {
    return ready(pending) && std::all_of(notes.begin(), notes.end(), [](const auto& n) { return ready(n); });
  }));
  auto r = pending.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("Extension 'conn' stopped reading its input: ", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find(" bytes queued, none read before a call's deadline"), std::string::npos)
      << r.error().message;
  for (auto& n : notes) {
    auto sent = n.get();
    if (!sent) {
      EXPECT_NE(sent.error().message.find("stopped reading its input"), std::string::npos) << sent.error().message;
    }
  }
  EXPECT_TRUE(run_until(io, [&] { return connection->queued_bytes() == 0; })) << "the queue is released";
  EXPECT_FALSE(connection->lifecycle()->live());
}

TEST_F(ConnectionTest, AFrameLargerThanTheBudgetPassesWhenNothingIsQueued) {
  connect({"echo"});
  const boost::json::value pad = boost::json::object{{"pad", std::string(rpc::k_write_queue_budget + (1 << 20), 'n')}};
  auto sent = run_bounded(io, connection->notify("test.pad", pad));
  ASSERT_TRUE(sent);
  ASSERT_TRUE(*sent) << sent->error().message;
  auto echoed = run_bounded(io, connection->call("tool.call", echo_params(16), 1));
  ASSERT_TRUE(echoed);
  ASSERT_TRUE(*echoed) << echoed->error().message;
}

TEST_F(ConnectionTest, ACallCancelledAfterItsFrameWasWrittenLeavesTheTransportOpen) {
  connect({"echo"});
  asio::steady_timer deadline(io, std::chrono::milliseconds(50));
  const boost::json::value no_params;
  auto raced = run_bounded(io, connection->call("pending", no_params, 1) ||
                                   deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  ASSERT_TRUE(raced);
  EXPECT_EQ(raced->index(), 1u);
  auto echoed = run_bounded(io, connection->call("tool.call", echo_params(16), 2));
  ASSERT_TRUE(echoed);
  ASSERT_TRUE(*echoed) << echoed->error().message;
  EXPECT_TRUE(connection->lifecycle()->live());
}

TEST_F(ConnectionTest, AReaderThatThrowsEndsItsTransportAndFailsPendingCallsAtOnce) {
  connect({"echo"});
  inbox->set_reader_hook([](const boost::json::value& message) {
    if (message.as_object().contains("result")) throw std::runtime_error("injected fault");
  });
  const boost::json::value no_params;
  const boost::json::value echo = echo_params(16);
  auto pending = spawn(connection->call("pending", no_params, 1));  // never answered, no deadline
  auto echoed = spawn(connection->call("tool.call", echo, 2));      // its reply makes the reader throw
  ASSERT_TRUE(run_until(io, [&] { return ready(pending) && ready(echoed); }));
  const std::string expected = "internal error in the reader of extension 'conn': injected fault";
  auto r = pending.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, expected);
  auto e = echoed.get();
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, expected);
  EXPECT_FALSE(connection->reader_running());
  EXPECT_FALSE(connection->lifecycle()->live());
  auto after = run_bounded(io, connection->call("tool.call", echo, 3));
  ASSERT_TRUE(after);
  EXPECT_FALSE(*after) << "the transport has ended";
}

}  // namespace
}  // namespace exthost
