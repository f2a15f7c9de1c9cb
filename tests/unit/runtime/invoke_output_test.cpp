// Ported from the reference's invoke_output tests (SPEC §7.7, §8.3).
#include "runtime/invoke_output.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "../../support/bounded.hpp"

namespace exthost::runtime {
namespace {

using namespace protocol;

InvokeCommandEvent text(std::string s) { return CommandOutputEvent(command_output::Text{std::move(s)}); }
InvokeCommandEvent error(std::string s) { return CommandOutputEvent(command_output::Error{std::move(s)}); }
InvokeCommandEvent done() { return CommandOutputEvent(command_output::Done{}); }
InvokeCommandEvent start(std::string id, std::string label) { return TaskEvent(task_event::Start{std::move(id), std::move(label), TaskKind::generic}); }
InvokeCommandEvent task_done(std::string id) { return TaskEvent(task_event::Done{std::move(id), std::nullopt}); }

std::string content(const InvokeCommandEvent& e) {
  const auto& out = std::get<CommandOutputEvent>(e);
  if (const auto* t = std::get_if<command_output::Text>(&out)) return t->content;
  if (const auto* x = std::get_if<command_output::Error>(&out)) return x->content;
  return "(done)";
}

// Feeds events through a collector as the producer would, and checks the identities.
InvokeOutputReport run(InvokeOutputBudget budget, std::vector<InvokeCommandEvent> events) {
  InvokeOutputCollector collector(budget);
  std::uint64_t produced = 0, produced_bytes = 0;
  for (auto& e : events) {
    ++produced;
    produced_bytes += event_payload_bytes(e);
    collector.ingest(std::move(e));
    const auto& c = collector.counters();
    EXPECT_LE(c.retained_payload_bytes, budget.max_retained_payload_bytes == SIZE_MAX
                                            ? SIZE_MAX
                                            : budget.max_retained_payload_bytes + budget.control_reserve_bytes);
  }
  auto report = std::move(collector).finish(produced, produced_bytes);
  const auto& c = report.counters;
  EXPECT_EQ(c.consumed_payload_bytes, c.retained_payload_bytes + c.truncated_payload_bytes + c.dropped_payload_bytes);
  EXPECT_EQ(c.consumed_events, c.retained_events + c.dropped_events);
  EXPECT_EQ(report.events.size(), c.retained_events);
  EXPECT_EQ(c.produced_events, c.consumed_events);
  EXPECT_EQ(c.produced_payload_bytes, c.consumed_payload_bytes);
  return report;
}

InvokeOutputBudget budget(std::size_t bytes, std::size_t events = 1024, std::size_t reserve = 16384) {
  return {bytes, events, reserve};
}

TEST(InvokeOutput, UnderBudgetOutputIsRetainedVerbatim) {
  auto r = run({}, {text("hello"), start("t1", "Fetching"), done()});
  EXPECT_EQ(r.events.size(), 3u);
  EXPECT_FALSE(r.is_limited());
  EXPECT_FALSE(r.limit_notice());
  EXPECT_TRUE(r.counters.saw_done);
}

TEST(InvokeOutput, HeadRetentionTruncatesTheBoundaryEventThenDropsTheRest) {
  auto r = run(budget(10), {text("abcdef"), text("ghijkl"), text("mnopqr")});
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(content(r.events[0]), "abcdef");
  EXPECT_EQ(content(r.events[1]), "ghij");
  EXPECT_EQ(r.counters.retained_payload_bytes, 10u);
  EXPECT_EQ(r.counters.truncated_events, 1u);
  EXPECT_EQ(r.counters.truncated_payload_bytes, 2u);
  EXPECT_EQ(r.counters.dropped_events, 1u);
  EXPECT_EQ(r.counters.dropped_payload_bytes, 6u);
}

TEST(InvokeOutput, TruncationIsUtf8CharBoundarySafe) {
  auto r = run(budget(3), {text("\xC3\xA9\xC3\xA9")});
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(content(r.events[0]), "\xC3\xA9");
  EXPECT_EQ(r.counters.retained_payload_bytes, 2u);
  EXPECT_EQ(r.counters.truncated_payload_bytes, 2u);
}

TEST(InvokeOutput, EventBudgetCapsTinyEventFloods) {
  std::vector<InvokeCommandEvent> flood;
  for (int i = 0; i < 500; ++i) flood.push_back(text("x"));
  auto r = run(budget(262144, 16), std::move(flood));
  EXPECT_EQ(r.counters.retained_events, 16u);
  EXPECT_EQ(r.counters.dropped_events, 484u);
}

TEST(InvokeOutput, FirstDoneMarkerSurvivesBudgetExhaustion) {
  auto r = run(budget(4, 1024, 1024), {text("aaaa"), text("bbbb"), done(), done()});
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(content(r.events[0]), "aaaa");
  EXPECT_EQ(content(r.events[1]), "(done)");
  EXPECT_EQ(r.counters.dropped_events, 2u);
  EXPECT_TRUE(r.counters.saw_done);
}

TEST(InvokeOutput, TaskDoneForARetainedStartSurvivesBudgetExhaustion) {
  auto r = run(budget(3), {start("t1", "L"), text("8 bytes!"), task_done("t1"), task_done("t1")});
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<task_event::Start>(std::get<TaskEvent>(r.events[0])));
  EXPECT_TRUE(std::holds_alternative<task_event::Done>(std::get<TaskEvent>(r.events[1])));
  EXPECT_EQ(r.counters.dropped_events, 2u);
}

TEST(InvokeOutput, TaskDoneForAnUnknownTaskDoesNotConsumeTheControlReserve) {
  auto r = run(budget(0, 0, 1024), {task_done("never-started")});
  EXPECT_EQ(r.events.size(), 0u);
  EXPECT_EQ(r.counters.dropped_events, 1u);
}

TEST(InvokeOutput, DroppedErrorEventsAreCountedAndFlaggedInTheNotice) {
  auto r = run(budget(2), {text("xx"), error("boom")});
  EXPECT_EQ(r.counters.dropped_error_events, 1u);
  auto notice = r.limit_notice();
  ASSERT_TRUE(notice);
  EXPECT_TRUE(notice->severity_error);
  EXPECT_EQ(notice->message,
            "command output limited by invocation budget: produced 6 bytes in 2 events; retained 2 bytes in 1 events; "
            "truncated 0 bytes across 0 events; dropped 4 bytes across 1 events (including 1 error events)");
}

TEST(InvokeOutput, DisabledBudgetRetainsTheEntireFlood) {
  std::vector<InvokeCommandEvent> flood;
  for (int i = 0; i < 1000; ++i) flood.push_back(text(std::string(1024, 'x')));
  auto r = run(InvokeOutputBudget::unlimited(), std::move(flood));
  EXPECT_EQ(r.counters.retained_events, 1000u);
  EXPECT_EQ(r.counters.retained_payload_bytes, 1024000u);
}

TEST(InvokeOutput, PayloadWeightCountsEveryProducerString) {
  EXPECT_EQ(event_payload_bytes(CommandOutputEvent(command_output::Table{{"ab", "c"}, {{"d", "ef"}, {"g"}}})), 7u);
  EXPECT_EQ(event_payload_bytes(TaskEvent(task_event::Update{"id", 1, 2, std::string("msg")})), 5u);
  EXPECT_EQ(event_payload_bytes(TaskEvent(task_event::Log{"id", "line"})), 6u);
  EXPECT_EQ(event_payload_bytes(TaskEvent(task_event::Done{"id", std::string("err")})), 5u);
  EXPECT_EQ(event_payload_bytes(done()), 0u);
}

TEST(InvokeOutput, ProducedCountsSurviveAClosedCollector) {
  boost::asio::io_context io;
  InvokeEventChannel channel(io.get_executor());
  channel.abandon();
  auto sent = exthost::testing::run_bounded(io, channel.send(text("late")));
  ASSERT_TRUE(sent);
  EXPECT_FALSE(*sent) << "a send after the collector is gone fails";
  EXPECT_TRUE(channel.is_closed());
  auto report = exthost::testing::run_bounded(io, channel.collect());
  ASSERT_TRUE(report);
  EXPECT_EQ(report->counters.produced_events, 1u);
  EXPECT_EQ(report->counters.produced_payload_bytes, 4u);
  EXPECT_EQ(report->counters.consumed_events, 0u);
}

}  // namespace
}  // namespace exthost::runtime
