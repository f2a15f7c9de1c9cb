// The hook bus (SPEC §8.6's hooks/mod.rs tests) with in-process handlers.
#include "host/hook_bus.hpp"

#include <gtest/gtest.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <algorithm>
#include <functional>
#include <map>
#include <spdlog/sinks/ostream_sink.h>
#include <sstream>

#include "host/tool_hooks.hpp"
#include "util/log.hpp"
#include "../../support/bounded.hpp"

namespace exthost::host {
namespace {

namespace asio = boost::asio;
namespace hr = protocol::hook_result;
using protocol::HookEvent;
using protocol::HookKind;
using protocol::HookResult;

class ScriptedHandler final : public runtime::ExtensionHandler {
 public:
  ScriptedHandler(std::string id, HookResult answer, bool hang = false)
      : m_id(std::move(id)), m_answer(std::move(answer)) {
    if (hang) hangs = [](const HookEvent&) { return true; };
  }
  const std::string& id() const override { return m_id; }
  asio::awaitable<Result<HookResult>> handle(const HookEvent& event) override {
    ++calls;
    ++calls_by_kind[event.kind];
    last = event.to_json();
    if (hangs && hangs(event)) {
      asio::steady_timer never(co_await asio::this_coro::executor, std::chrono::hours(1));
      co_await never.async_wait(asio::use_awaitable);
    }
    co_return m_answer;
  }
  asio::awaitable<void> shutdown() override { co_return; }
  int calls = 0;
  std::map<HookKind, int> calls_by_kind;
  boost::json::value last;
  std::function<bool(const HookEvent&)> hangs;  // which events are never answered

 private:
  std::string m_id;
  HookResult m_answer;
};

// The logger's lines while it lives, without their prefix.
class LogCapture {
 public:
  LogCapture() : m_sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(m_out)) {
    m_sink->set_pattern("%v");
    util::log().sinks().push_back(m_sink);
  }
  ~LogCapture() {
    auto& sinks = util::log().sinks();
    sinks.erase(std::find(sinks.begin(), sinks.end(), m_sink));
  }
  std::string text() const { return m_out.str(); }

 private:
  std::ostringstream m_out;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> m_sink;
};

PermissionSet perms(std::initializer_list<Permission> ps) {
  PermissionSet s;
  for (auto p : ps) s.add(p);
  return s;
}

HookSubscription sub(HookKind kind, std::optional<std::string> tool = std::nullopt) {
  HookSubscription s;
  s.kind = kind;
  s.tool = std::move(tool);
  return s;
}

HookEvent tool_event(HookKind kind, std::string name, const char* input_json) {
  HookEvent e;
  e.kind = kind;
  e.tool_name = std::move(name);
  e.tool_input = boost::json::parse(input_json);
  return e;
}

class HookBusTest : public ::testing::Test {
 protected:
  HookResult emit(HookEvent e) { return testing::run_bounded(io, bus.emit(std::move(e)))->result; }
  HookVerdict verdict(HookEvent e) { return *testing::run_bounded(io, bus.emit(std::move(e))); }
  std::shared_ptr<ScriptedHandler> add(std::string id, HookResult answer, HookSubscription s, PermissionSet p) {
    auto h = std::make_shared<ScriptedHandler>(std::move(id), std::move(answer));
    EXPECT_TRUE(bus.subscribe(h, std::move(s), p));
    return h;
  }
  asio::io_context io;
  HookBus bus;
  const PermissionSet intercept = perms({Permission::tools_intercept});
};

TEST_F(HookBusTest, EmptyBusReturnsContinue) {
  EXPECT_TRUE(bus.is_empty());
  EXPECT_EQ(protocol::action_name(emit(tool_event(HookKind::before_tool_call, "bash", "{}"))), "continue");
}

TEST_F(HookBusTest, HandlerReceivesEvents) {
  auto h = add("a", hr::Continue{}, sub(HookKind::before_tool_call), intercept);
  emit(tool_event(HookKind::before_tool_call, "bash", R"({"command":"ls"})"));
  EXPECT_EQ(h->calls, 1);
  EXPECT_EQ(h->last.at("tool_name"), "bash");
  EXPECT_FALSE(bus.is_empty());
}

// Every subscriber is asked at once; the fold in load order decides (a later subscriber's
// answer never overrides an earlier decision).
TEST_F(HookBusTest, BlockStopsTheChain) {
  add("a", hr::Block{"no"}, sub(HookKind::before_tool_call), intercept);
  add("b", hr::Block{"second"}, sub(HookKind::before_tool_call), intercept);
  auto v = verdict(tool_event(HookKind::before_tool_call, "bash", "{}"));
  ASSERT_TRUE(std::holds_alternative<hr::Block>(v.result));
  EXPECT_EQ(std::get<hr::Block>(v.result).reason, "no");
  EXPECT_EQ(v.extension_id, "a");
  EXPECT_FALSE(v.fail_closed);
}

TEST_F(HookBusTest, ModifyStopsTheChain) {
  add("a", hr::Modify{boost::json::parse(R"({"command":"echo safe"})")}, sub(HookKind::before_tool_call), intercept);
  add("b", hr::Block{"x"}, sub(HookKind::before_tool_call), intercept);
  auto v = verdict(tool_event(HookKind::before_tool_call, "bash", "{}"));
  ASSERT_TRUE(std::holds_alternative<hr::Modify>(v.result));
  EXPECT_EQ(v.extension_id, "a");
}

TEST_F(HookBusTest, ConfirmStopsTheChainForBeforeToolCall) {
  add("a", hr::Confirm{"Run this?"}, sub(HookKind::before_tool_call), intercept);
  add("b", hr::Block{"x"}, sub(HookKind::before_tool_call), intercept);
  auto v = verdict(tool_event(HookKind::before_tool_call, "bash", "{}"));
  EXPECT_TRUE(std::holds_alternative<hr::Confirm>(v.result));
  EXPECT_EQ(v.extension_id, "a");
}

TEST_F(HookBusTest, ConfirmIsIgnoredForNonToolHooks) {
  auto h = add("a", hr::Confirm{"?"}, sub(HookKind::before_message), perms({Permission::privacy_llm_content}));
  HookEvent e;
  e.kind = HookKind::before_message;
  e.message = "hi";
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(e)));
  EXPECT_EQ(h->calls, 1);
}

TEST_F(HookBusTest, InjectionsAccumulateJoinedByABlankLine) {
  const auto llm = perms({Permission::privacy_llm_content});
  add("a", hr::Inject{"one"}, sub(HookKind::before_message), llm);
  add("b", hr::Inject{"two"}, sub(HookKind::before_message), llm);
  HookEvent e;
  e.kind = HookKind::before_message;
  auto r = emit(e);
  ASSERT_TRUE(std::holds_alternative<hr::Inject>(r));
  EXPECT_EQ(std::get<hr::Inject>(r).content, "one\n\ntwo");
}

TEST_F(HookBusTest, ReplaceWinsAndStopsTheChainWhenPermitted) {
  add("a", hr::Replace{"CRUSHED"}, sub(HookKind::after_tool_call),
      perms({Permission::tools_intercept, Permission::tools_transform_output}));
  add("b", hr::Replace{"other"}, sub(HookKind::after_tool_call),
      perms({Permission::tools_intercept, Permission::tools_transform_output}));
  auto v = verdict(tool_event(HookKind::after_tool_call, "bash", "{}"));
  ASSERT_TRUE(std::holds_alternative<hr::Replace>(v.result));
  EXPECT_EQ(resolve_after_tool_call(v.result), std::optional<std::string>("CRUSHED"));
  EXPECT_EQ(v.extension_id, "a");
}

TEST_F(HookBusTest, ReplaceWithoutTransformPermissionIsIgnoredAndTheChainContinues) {
  add("a", hr::Replace{"CRUSHED"}, sub(HookKind::after_tool_call), intercept);
  auto second = add("b", hr::Continue{}, sub(HookKind::after_tool_call), intercept);
  auto r = emit(tool_event(HookKind::after_tool_call, "bash", "{}"));
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(r));
  EXPECT_EQ(resolve_after_tool_call(r), std::nullopt);
  EXPECT_EQ(second->calls, 1);
}

TEST_F(HookBusTest, ToolFilterOnlyMatchesTheNamedToolByApiOrRuntimeName) {
  auto h = add("a", hr::Block{"x"}, sub(HookKind::before_tool_call, "p:echo"), intercept);
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(tool_event(HookKind::before_tool_call, "bash", "{}"))));
  auto e = tool_event(HookKind::before_tool_call, "p_echo", "{}");
  e.tool_runtime_name = "p:echo";
  EXPECT_TRUE(std::holds_alternative<hr::Block>(emit(e)));
  EXPECT_EQ(h->calls, 1);
}

TEST_F(HookBusTest, MatcherSkipsTheHandlerWhenInputDoesNotContainTheValue) {
  HookSubscription s = sub(HookKind::before_tool_call);
  s.input_contains = "rm -rf";
  auto h = add("a", hr::Block{"x"}, s, intercept);
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(tool_event(HookKind::before_tool_call, "bash", R"({"command":"ls"})"))));
  EXPECT_EQ(h->calls, 0);
  EXPECT_TRUE(std::holds_alternative<hr::Block>(emit(tool_event(HookKind::before_tool_call, "bash", R"({"command":"rm -rf /"})"))));
}

TEST_F(HookBusTest, MatcherConditionsAreCombinedWithAnd) {
  HookSubscription s = sub(HookKind::before_tool_call);
  s.input_contains = "ls";
  s.input_equals = boost::json::parse(R"({"command":"ls"})");
  add("a", hr::Block{"x"}, s, intercept);
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(tool_event(HookKind::before_tool_call, "bash", R"({"command":"ls -l"})"))));
  EXPECT_TRUE(std::holds_alternative<hr::Block>(emit(tool_event(HookKind::before_tool_call, "bash", R"({"command":"ls"})"))));
}

TEST_F(HookBusTest, PermissionDeniedRejectsSubscribe) {
  auto h = std::make_shared<ScriptedHandler>("a", hr::Continue{});
  auto r = bus.subscribe(h, sub(HookKind::before_tool_call), PermissionSet{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Extension 'a' lacks permission 'tools.intercept' required for hook 'before_tool_call'");
}

TEST_F(HookBusTest, UnsubscribeRemovesHandlersAndListingIsPerExtension) {
  add("a", hr::Continue{}, sub(HookKind::before_tool_call, "bash"), intercept);
  add("a", hr::Continue{}, sub(HookKind::after_tool_call), intercept);
  add("a", hr::Continue{}, sub(HookKind::before_tool_call), intercept);
  add("b", hr::Continue{}, sub(HookKind::before_tool_call), intercept);
  auto listed = bus.subscriptions_for("a");
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].first, HookKind::after_tool_call);
  EXPECT_EQ(listed[1], (std::pair<HookKind, std::optional<std::string>>{HookKind::before_tool_call, std::nullopt}));
  EXPECT_EQ(listed[2].second, std::optional<std::string>("bash"));
  EXPECT_EQ(bus.handler_count(), 4u);
  bus.unsubscribe_all("a");
  EXPECT_EQ(bus.handler_count(), 1u);
  EXPECT_TRUE(bus.subscriptions_for("a").empty());
}

TEST_F(HookBusTest, AHandlerThatNeverAnswersIsSkippedAfterTheBusDeadline) {
  HookBus quick(std::chrono::milliseconds(50));
  auto hung = std::make_shared<ScriptedHandler>("hung", hr::Block{"late"}, true);
  auto next = std::make_shared<ScriptedHandler>("next", hr::Block{"next"});
  ASSERT_TRUE(quick.subscribe(hung, sub(HookKind::before_tool_call), intercept));
  ASSERT_TRUE(quick.subscribe(next, sub(HookKind::before_tool_call), intercept));
  auto r = testing::run_bounded(io, quick.emit(tool_event(HookKind::before_tool_call, "bash", "{}")));
  ASSERT_TRUE(r);
  ASSERT_TRUE(std::holds_alternative<hr::Block>(r->result));
  EXPECT_EQ(std::get<hr::Block>(r->result).reason, "next");
  EXPECT_EQ(r->extension_id, "next");
}

TEST_F(HookBusTest, BlockFromObserveOnlyHooksIsIgnored) {
  const auto llm = perms({Permission::privacy_llm_content});
  auto h = add("a", hr::Block{"x"}, sub(HookKind::on_message_complete), llm);
  HookEvent e;
  e.kind = HookKind::on_message_complete;
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(e)));
  EXPECT_EQ(h->calls, 1);
}

TEST_F(HookBusTest, ContextPhaseNeedsBothKeys) {
  add("one-key", hr::ContextPhase{"new_task"}, sub(HookKind::on_message_complete),
      perms({Permission::privacy_llm_content}));
  HookEvent e;
  e.kind = HookKind::on_message_complete;
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(e)));
  add("two-keys", hr::ContextPhase{"new_task"}, sub(HookKind::on_message_complete),
      perms({Permission::privacy_llm_content, Permission::session_lifecycle}));
  EXPECT_TRUE(std::holds_alternative<hr::ContextPhase>(emit(e)));
}

TEST_F(HookBusTest, SessionEndAsksEveryHandlerConcurrentlyAndFoldsInOrder) {
  HookBus quick(std::chrono::milliseconds(100));
  const auto life = perms({Permission::session_lifecycle});
  auto hung = std::make_shared<ScriptedHandler>("hung", hr::Continue{}, true);
  auto a = std::make_shared<ScriptedHandler>("a", hr::Continue{});
  auto b = std::make_shared<ScriptedHandler>("b", hr::Continue{});
  for (auto& h : {hung, a, b}) ASSERT_TRUE(quick.subscribe(h, sub(HookKind::on_session_end), life));
  HookEvent e;
  e.kind = HookKind::on_session_end;
  e.session_id = "sess-1";
  auto r = testing::run_bounded(io, quick.emit_concurrent(e));
  ASSERT_TRUE(r);
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(*r));
  EXPECT_EQ(a->calls + b->calls + hung->calls, 3);
  EXPECT_EQ(a->last.at("session_id"), "sess-1");
}

// Suspension: a short bus deadline makes the timeouts, a clock of the test's own drives
// the interval.
class HookSuspensionTest : public ::testing::Test {
 protected:
  HookResult emit(HookEvent e) { return testing::run_bounded(io, bus.emit(std::move(e)))->result; }
  HookResult emit_concurrent(HookEvent e) { return *testing::run_bounded(io, bus.emit_concurrent(std::move(e))); }
  std::shared_ptr<ScriptedHandler> add(std::string id, HookResult answer, HookSubscription s, PermissionSet p,
                                       bool hang = false) {
    auto h = std::make_shared<ScriptedHandler>(std::move(id), std::move(answer), hang);
    EXPECT_TRUE(bus.subscribe(h, std::move(s), p));
    return h;
  }
  HookEvent bash() { return tool_event(HookKind::before_tool_call, "bash", "{}"); }
  // Emits `n` events that the hung handler lets time out.
  void time_out(int n) {
    for (int i = 0; i < n; ++i) emit(bash());
  }

  asio::io_context io;
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  HookBus bus{std::chrono::milliseconds(20), [this] { return now; }};
  const PermissionSet intercept = perms({Permission::tools_intercept});
};

TEST_F(HookSuspensionTest, ThreeTimeoutsInARowSuspendTheSubscriptionWithAWarning) {
  LogCapture log;
  auto hung = add("x", hr::Block{"late"}, sub(HookKind::before_tool_call), intercept, true);
  time_out(2);
  EXPECT_FALSE(bus.has_suspended("x"));
  EXPECT_TRUE(bus.suspended_for("x").empty());
  time_out(1);
  EXPECT_EQ(hung->calls, 3);
  EXPECT_TRUE(bus.has_suspended("x"));
  const auto listed = bus.suspended_for("x");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].subscription.kind, HookKind::before_tool_call);
  EXPECT_EQ(listed[0].subscription.tool, std::nullopt);
  EXPECT_EQ(listed[0].until, now + k_hook_suspend_interval);
  EXPECT_EQ(listed[0].retry_in, std::chrono::milliseconds(30'000));
  EXPECT_EQ(listed[0].consecutive_timeouts, 3u);
  EXPECT_NE(log.text().find("hook before_tool_call of extension 'x' did not answer 3 times in a row; "
                            "suspended for 30 s"),
            std::string::npos)
      << log.text();
}

TEST_F(HookSuspensionTest, WhileSuspendedTheHandlerIsNotAskedAndTheChainGoesOn) {
  auto hung = add("x", hr::Block{"late"}, sub(HookKind::before_tool_call), intercept, true);
  auto next = add("y", hr::Block{"next"}, sub(HookKind::before_tool_call), intercept);
  time_out(3);
  now += k_hook_suspend_interval - std::chrono::milliseconds(1);
  for (int i = 0; i < 2; ++i) {
    auto r = emit(bash());
    ASSERT_TRUE(std::holds_alternative<hr::Block>(r));
    EXPECT_EQ(std::get<hr::Block>(r).reason, "next");
  }
  EXPECT_EQ(hung->calls, 3);
  EXPECT_EQ(next->calls, 5);
  EXPECT_TRUE(bus.has_suspended("x"));
  EXPECT_FALSE(bus.has_suspended("y"));
}

TEST_F(HookSuspensionTest, AfterTheIntervalOneEventProbesAndATimeoutSuspendsAgain) {
  LogCapture log;
  auto hung = add("x", hr::Block{"late"}, sub(HookKind::before_tool_call), intercept, true);
  time_out(3);
  now += k_hook_suspend_interval;
  emit(bash());
  EXPECT_EQ(hung->calls, 4);  // the probe
  ASSERT_TRUE(bus.has_suspended("x"));
  const auto listed = bus.suspended_for("x");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].until, now + k_hook_suspend_interval);
  EXPECT_EQ(listed[0].consecutive_timeouts, 4u);
  EXPECT_NE(log.text().find("did not answer 4 times in a row; suspended for 30 s"), std::string::npos) << log.text();
  emit(bash());
  EXPECT_EQ(hung->calls, 4);
}

TEST_F(HookSuspensionTest, AnAnsweredProbeResumesAndTheCountStartsOver) {
  auto hung = add("x", hr::Block{"awake"}, sub(HookKind::before_tool_call), intercept, true);
  time_out(3);
  now += k_hook_suspend_interval;
  hung->hangs = nullptr;
  auto r = emit(bash());
  ASSERT_TRUE(std::holds_alternative<hr::Block>(r));
  EXPECT_EQ(std::get<hr::Block>(r).reason, "awake");
  EXPECT_FALSE(bus.has_suspended("x"));
  emit(bash());
  EXPECT_EQ(hung->calls, 5);
  hung->hangs = [](const HookEvent&) { return true; };
  time_out(2);
  EXPECT_FALSE(bus.has_suspended("x"));
  time_out(1);
  EXPECT_TRUE(bus.has_suspended("x"));
}

TEST_F(HookSuspensionTest, AnAnswerOfAnyKindIsNotATimeout) {
  // The third event gets an answer the kind does not allow: ignored, but an answer.
  auto h = add("x", hr::Inject{"not for tools"}, sub(HookKind::before_tool_call), intercept);
  h->hangs = [&h](const HookEvent&) { return h->calls != 3; };
  time_out(5);
  EXPECT_EQ(h->calls, 5);
  EXPECT_FALSE(bus.has_suspended("x"));
  time_out(1);
  EXPECT_TRUE(bus.has_suspended("x"));
}

TEST_F(HookSuspensionTest, OtherSubscriptionsOfTheSameExtensionAreUnaffected) {
  auto h = std::make_shared<ScriptedHandler>("x", hr::Continue{});
  h->hangs = [](const HookEvent& e) { return e.kind == HookKind::before_tool_call && e.tool_name == "bash"; };
  ASSERT_TRUE(bus.subscribe(h, sub(HookKind::before_tool_call, "bash"), intercept));
  ASSERT_TRUE(bus.subscribe(h, sub(HookKind::before_tool_call, "ls"), intercept));
  ASSERT_TRUE(bus.subscribe(h, sub(HookKind::after_tool_call), intercept));
  time_out(3);
  const auto listed = bus.suspended_for("x");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].subscription.tool, std::optional<std::string>("bash"));
  emit(bash());
  EXPECT_EQ(h->calls, 3);
  emit(tool_event(HookKind::before_tool_call, "ls", "{}"));
  emit(tool_event(HookKind::after_tool_call, "bash", "{}"));
  EXPECT_EQ(h->calls, 5);
  EXPECT_EQ(h->calls_by_kind[HookKind::after_tool_call], 1);
  EXPECT_EQ(bus.suspended_for("x").size(), 1u);
}

TEST_F(HookSuspensionTest, TheRemainingChainKeepsItsOrder) {
  const auto llm = perms({Permission::privacy_llm_content});
  auto first = add("a", hr::Inject{"one"}, sub(HookKind::before_message), llm);
  auto hung = add("b", hr::Inject{"two"}, sub(HookKind::before_message), llm, true);
  auto third = add("c", hr::Inject{"three"}, sub(HookKind::before_message), llm);
  HookEvent e;
  e.kind = HookKind::before_message;
  for (int i = 0; i < 5; ++i) {
    auto r = emit(e);
    ASSERT_TRUE(std::holds_alternative<hr::Inject>(r));
    EXPECT_EQ(std::get<hr::Inject>(r).content, "one\n\nthree");
  }
  EXPECT_EQ(hung->calls, 3);
  EXPECT_EQ(first->calls, 5);
  EXPECT_EQ(third->calls, 5);
}

TEST_F(HookSuspensionTest, TheConcurrentEmitSkipsASuspendedSubscriptionToo) {
  const auto life = perms({Permission::session_lifecycle});
  auto hung = add("x", hr::Continue{}, sub(HookKind::on_session_end), life, true);
  auto other = add("y", hr::Continue{}, sub(HookKind::on_session_end), life);
  HookEvent e;
  e.kind = HookKind::on_session_end;
  for (int i = 0; i < 3; ++i) emit_concurrent(e);
  EXPECT_TRUE(bus.has_suspended("x"));
  emit_concurrent(e);
  EXPECT_EQ(hung->calls, 3);
  EXPECT_EQ(other->calls, 4);
  now += k_hook_suspend_interval;
  emit_concurrent(e);
  EXPECT_EQ(hung->calls, 4);
  EXPECT_TRUE(bus.has_suspended("x"));
}

TEST_F(HookSuspensionTest, AProbeWhoseEmitIsAbandonedLeavesTheNextEventToProbe) {
  using namespace asio::experimental::awaitable_operators;
  auto hung = add("x", hr::Block{"late"}, sub(HookKind::before_tool_call), intercept, true);
  time_out(3);
  now += k_hook_suspend_interval;
  auto abandoned = [&]() -> asio::awaitable<void> {
    asio::steady_timer soon(co_await asio::this_coro::executor, std::chrono::milliseconds(1));
    co_await (bus.emit(bash()) || soon.async_wait(asio::use_awaitable));
  };
  ASSERT_TRUE(testing::run_bounded(io, abandoned()));
  EXPECT_EQ(hung->calls, 4);
  EXPECT_EQ(bus.suspended_for("x").at(0).consecutive_timeouts, 3u);  // no timeout counted
  emit(bash());
  EXPECT_EQ(hung->calls, 5);  // probed again
  EXPECT_TRUE(bus.has_suspended("x"));
}

TEST_F(HookSuspensionTest, UnsubscribingForgetsTheSuspension) {
  auto hung = std::make_shared<ScriptedHandler>("x", hr::Continue{}, true);
  ASSERT_TRUE(bus.subscribe(hung, sub(HookKind::before_tool_call), intercept));
  time_out(3);
  ASSERT_TRUE(bus.has_suspended("x"));
  bus.unsubscribe_all("x");
  EXPECT_FALSE(bus.has_suspended("x"));
  ASSERT_TRUE(bus.subscribe(hung, sub(HookKind::before_tool_call), intercept));
  EXPECT_FALSE(bus.has_suspended("x"));
  emit(bash());
  EXPECT_EQ(hung->calls, 4);
}

TEST(HookActions, AllowedActionNamesFollowTheReferenceOrder) {
  EXPECT_EQ(allowed_action_names(HookKind::before_tool_call),
            (std::vector<std::string_view>{"continue", "block", "confirm", "modify"}));
  EXPECT_EQ(allowed_action_names(HookKind::after_tool_call), (std::vector<std::string_view>{"continue", "replace"}));
  EXPECT_EQ(allowed_action_names(HookKind::on_message_complete),
            (std::vector<std::string_view>{"continue", "context_phase"}));
  EXPECT_TRUE(allows_tool_filter(HookKind::after_tool_call));
  EXPECT_FALSE(allows_tool_filter(HookKind::before_message));
}

TEST(ToolHooks, AfterToolCallPreviewKeepsUtf8AndCountsTheWhole) {
  const std::string big = std::string(k_max_hook_output - 1, 'a') + "\xC3\xA9" + "tail";
  const std::string preview = hook_output_preview(big);
  EXPECT_EQ(preview, std::string(k_max_hook_output - 1, 'a') + "\xE2\x80\xA6[truncated, " +
                         std::to_string(big.size()) + " total bytes]");
  EXPECT_EQ(hook_output_preview("small"), "small");
  // More than 100 000 bytes of a 150 KB output reach the hook.
  EXPECT_EQ(hook_output_preview(std::string(150'000, 'x')).size(), 150'000u);
}

TEST(ToolHooks, ReplaceIsClampedAtOneMebibyteOnACharacterBoundary) {
  const std::string huge = std::string(k_max_replace_output - 1, 'x') + "\xC3\xA9";
  auto kept = resolve_after_tool_call(hr::Replace{huge});
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->size(), k_max_replace_output - 1);
  EXPECT_EQ(resolve_after_tool_call(hr::Replace{"[clamped:32] DEADBEEF"}), std::optional<std::string>("[clamped:32] DEADBEEF"));
}

TEST(ToolHooks, BeforeToolCallDecisions) {
  const auto original = boost::json::parse(R"({"command":"rm -rf /"})");
  auto blocked = resolve_before_tool_call(hr::Block{"rm -rf is not allowed"}, original, false);
  EXPECT_EQ(blocked.blocked, std::optional<std::string>("rm -rf is not allowed"));
  auto modified = resolve_before_tool_call(hr::Modify{boost::json::parse(R"({"command":"echo safe"})")}, original, false);
  EXPECT_FALSE(modified.blocked);
  EXPECT_EQ(modified.input, boost::json::parse(R"({"command":"echo safe"})"));
  auto headless = resolve_before_tool_call(hr::Confirm{"Run this command?"}, original, false);
  EXPECT_EQ(headless.blocked, std::optional<std::string>(
                                  "Tool call requires confirmation but no interactive prompt is available: Run this command?"));
  EXPECT_FALSE(resolve_before_tool_call(hr::Confirm{"ok?"}, original, true).blocked);
  EXPECT_EQ(tool_output_text(boost::json::parse(R"({"content":"echo: hi"})")), "echo: hi");
  EXPECT_EQ(tool_output_text(boost::json::parse(R"("plain")")), "plain");
  EXPECT_EQ(tool_output_text(boost::json::parse(R"({"n":1})")), R"({"n":1})");
}

}  // namespace
}  // namespace exthost::host
