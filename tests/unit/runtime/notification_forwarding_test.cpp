// Ported from the reference's invoke_command_dispatch_tests: the forwarder into the real
// bounded sink.
#include "runtime/notification_forwarding.hpp"

#include <gtest/gtest.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include "../../support/bounded.hpp"

namespace exthost::runtime {
namespace {

using namespace boost::asio::experimental::awaitable_operators;
using exthost::testing::run_bounded;

rpc::NotificationFrame frame(const char* method, const char* params) { return {method, boost::json::parse(params), {}}; }
// Frames are move-only (each holds its budget lease): a list of them is built from specs.
using FrameSpec = std::pair<const char*, const char*>;
FrameSpec spec(const char* method, const char* params) { return {method, params}; }

struct Forwarded {
  InvokeOutputReport report;
  bool saw_done = false;
  bool sink_open = true;
};

boost::asio::awaitable<bool> forward_all(InvokeEventChannel& channel, std::vector<rpc::NotificationFrame> frames,
                                         bool& sink_open) {
  bool saw_done = false;
  for (auto& f : frames) {
    if (co_await forward_invoke_command_frame("ext", "req-1", channel, sink_open, std::move(f))) saw_done = true;
  }
  channel.close();
  co_return saw_done;
}

Forwarded run(const std::vector<FrameSpec>& specs) {
  std::vector<rpc::NotificationFrame> frames;
  for (const auto& [method, params] : specs) frames.push_back(frame(method, params));
  boost::asio::io_context io;
  InvokeEventChannel channel(io.get_executor(), InvokeOutputBudget::unlimited());
  Forwarded out;
  auto both = run_bounded(io, [&]() -> boost::asio::awaitable<std::tuple<bool, InvokeOutputReport>> {
    co_return co_await (forward_all(channel, std::move(frames), out.sink_open) && channel.collect());
  }());
  if (both) {
    out.saw_done = std::get<0>(*both);
    out.report = std::move(std::get<1>(*both));
  }
  return out;
}

TEST(ForwardInvokeCommandFrame, ForwardsAMixedEventStreamInOrder) {
  auto f = run({spec("command.output", R"({"request_id":"req-1","event":{"kind":"text","content":"hi"}})"),
                spec("task.start", R"({"id":"dl","label":"Downloading","kind":"download"})"),
                spec("task.update", R"({"id":"dl","current":1,"total":2})"),
                spec("command.output", R"({"request_id":"req-1","kind":"system","content":"sys"})"),
                spec("task.done", R"({"id":"dl"})"),
                spec("command.output", R"({"request_id":"req-1","kind":"done"})")});
  ASSERT_EQ(f.report.events.size(), 6u);
  EXPECT_TRUE(std::holds_alternative<protocol::CommandOutputEvent>(f.report.events[0]));
  EXPECT_TRUE(std::holds_alternative<protocol::TaskEvent>(f.report.events[1]));
  EXPECT_TRUE(std::holds_alternative<protocol::TaskEvent>(f.report.events[2]));
  EXPECT_TRUE(std::holds_alternative<protocol::CommandOutputEvent>(f.report.events[3]));
  EXPECT_TRUE(std::holds_alternative<protocol::TaskEvent>(f.report.events[4]));
  EXPECT_TRUE(std::holds_alternative<protocol::command_output::Done>(std::get<protocol::CommandOutputEvent>(f.report.events[5])));
  EXPECT_TRUE(f.saw_done);
}

TEST(ForwardInvokeCommandFrame, IgnoresCommandOutputForAnUnrelatedRequestId) {
  auto f = run({spec("command.output", R"({"request_id":"other","kind":"done"})")});
  EXPECT_TRUE(f.report.events.empty());
  EXPECT_FALSE(f.saw_done);
}

TEST(ForwardInvokeCommandFrame, SkipsMalformedCommandOutputWithoutAborting) {
  auto f = run({spec("command.output", R"({"request_id":"req-1","event":{}})"),
                spec("command.output", R"({"request_id":"req-1","kind":"done"})")});
  ASSERT_EQ(f.report.events.size(), 1u);
  EXPECT_TRUE(f.saw_done);
}

TEST(ForwardInvokeCommandFrame, TaskEventsPassThroughRegardlessOfRequestId) {
  auto f = run({spec("task.log", R"({"id":"abc","line":"...","request_id":"unrelated"})")});
  ASSERT_EQ(f.report.events.size(), 1u);
  const auto& log = std::get<protocol::task_event::Log>(std::get<protocol::TaskEvent>(f.report.events[0]));
  EXPECT_EQ(log.id, "abc");
  EXPECT_EQ(log.line, "...");
}

TEST(ForwardInvokeCommandFrame, UnrelatedMethodsAreDropped) {
  auto f = run({spec("provider.stream.event", R"({"type":"text","delta":"x"})")});
  EXPECT_TRUE(f.report.events.empty());
}

TEST(ForwardInvokeCommandFrame, AClosedSinkLatchesOpenFalseWithoutBlocking) {
  boost::asio::io_context io;
  InvokeEventChannel channel(io.get_executor());
  channel.abandon();  // the collector is gone
  bool sink_open = true;
  auto saw_done = run_bounded(io, forward_invoke_command_frame("ext", "req-1", channel, sink_open,
                                                               frame("command.output", R"({"request_id":"req-1","kind":"done"})")),
                              std::chrono::seconds(3));
  ASSERT_TRUE(saw_done);
  EXPECT_TRUE(*saw_done);
  EXPECT_FALSE(sink_open);
}

TEST(ForwardProviderStreamFrame, ForwardsEventsSkipsMalformedAndIgnoresOtherMethods) {
  boost::asio::io_context io;
  ProviderEventSink sink(io.get_executor());
  bool open = true;
  auto go = [&]() -> boost::asio::awaitable<void> {
    co_await forward_provider_stream_frame("ext", sink, open, frame("provider.stream.event", R"({"type":"text","delta":"a"})"));
    co_await forward_provider_stream_frame("ext", sink, open, frame("provider.stream.event", R"({"type":"bogus"})"));
    co_await forward_provider_stream_frame("ext", sink, open, frame("command.output", R"({})"));
    co_await forward_provider_stream_frame("ext", sink, open, frame("provider.stream.event", R"({"event":{"type":"done"}})"));
  };
  ASSERT_TRUE(run_bounded(io, go()));
  ASSERT_EQ(sink.size(), 2u);
  EXPECT_EQ(std::get<protocol::stream_event::TextDelta>(*sink.try_pop()).text, "a");
  EXPECT_TRUE(std::holds_alternative<protocol::stream_event::Done>(*sink.try_pop()));
  EXPECT_TRUE(open);
}

}  // namespace
}  // namespace exthost::runtime
