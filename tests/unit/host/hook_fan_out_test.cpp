// The hook bus asks every subscriber at once and folds in load order; a failed hook fails
// open, or closed for an `on_error: block` subscription (in-process handlers whose answers
// the test releases when it wants).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <sstream>

#include "../../support/bounded.hpp"
#include "host/hook_bus.hpp"
#include "host/tool_hooks.hpp"
#include "rpc/event.hpp"
#include "util/log.hpp"

namespace exthost::host {
namespace {

namespace asio = boost::asio;
namespace hr = protocol::hook_result;
using protocol::HookEvent;
using protocol::HookKind;
using protocol::HookResult;
using testing::run_bounded;
using testing::run_until;

// Answers `answer`; a gated handler answers only once released. Records whether its ask was
// cancelled while it waited.
class GatedHandler final : public runtime::ExtensionHandler {
 public:
  GatedHandler(asio::io_context& io, std::string id, Result<HookResult> answer, bool gated)
      : m_id(std::move(id)), m_answer(std::move(answer)), m_gated(gated), m_release(io.get_executor()) {}
  const std::string& id() const override { return m_id; }
  asio::awaitable<Result<HookResult>> handle(const HookEvent&) override {
    ++calls;
    while (m_gated) {
      co_await m_release.wait();
      const auto state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none) {
        cancelled = true;
        co_return Error::internal("cancelled");
      }
    }
    ++answered;
    co_return m_answer;
  }
  asio::awaitable<void> shutdown() override { co_return; }
  void release() {
    m_gated = false;
    m_release.notify();
  }

  int calls = 0;
  int answered = 0;
  bool cancelled = false;

 private:
  std::string m_id;
  Result<HookResult> m_answer;
  bool m_gated;
  rpc::Event m_release;
};

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

HookSubscription sub(HookKind kind, HookOnError on_error = HookOnError::continue_chain) {
  HookSubscription s;
  s.kind = kind;
  s.on_error = on_error;
  return s;
}

HookEvent bash() {
  HookEvent e;
  e.kind = HookKind::before_tool_call;
  e.tool_name = "bash";
  e.tool_input = boost::json::parse(R"({"command":"ls"})");
  return e;
}

HookEvent message() {
  HookEvent e;
  e.kind = HookKind::before_message;
  e.message = "hi";
  return e;
}

Error failure(ErrorCause cause, std::string message) {
  return Error(cause == ErrorCause::timeout ? ErrorKind::timeout : ErrorKind::extension, std::move(message), cause);
}

std::string reason_of(const HookVerdict& v) {
  const auto* block = std::get_if<hr::Block>(&v.result);
  return block != nullptr ? block->reason : "(not a block: " + std::string(protocol::action_name(v.result)) + ")";
}

class HookFanOutTest : public ::testing::Test {
 protected:
  std::shared_ptr<GatedHandler> add(HookBus& target, std::string id, Result<HookResult> answer, HookSubscription s,
                                    bool gated = false, PermissionSet p = perms({Permission::tools_intercept})) {
    auto h = std::make_shared<GatedHandler>(io, std::move(id), std::move(answer), gated);
    EXPECT_TRUE(target.subscribe(h, std::move(s), p));
    return h;
  }
  std::shared_ptr<GatedHandler> add(std::string id, Result<HookResult> answer, HookSubscription s, bool gated = false,
                                    PermissionSet p = perms({Permission::tools_intercept})) {
    return add(bus, std::move(id), std::move(answer), std::move(s), gated, p);
  }
  HookVerdict emit(HookBus& b, HookEvent e) {
    auto v = run_bounded(io, b.emit(std::move(e)));
    return v ? *v : HookVerdict{hr::Block{"(emit did not end)"}, "", false};
  }
  // An emit left running on the context; the test runs the context itself.
  std::future<HookVerdict> start(HookBus& b, HookEvent e) {
    return asio::co_spawn(io, b.emit(std::move(e)), asio::use_future);
  }
  static bool ready(std::future<HookVerdict>& f) { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

  asio::io_context io;
  // Long enough that no test here relies on a deadline unless it sets its own.
  HookBus bus{std::chrono::hours(1)};
  const PermissionSet llm = perms({Permission::privacy_llm_content});
};

TEST_F(HookFanOutTest, EverySubscriberIsAskedBeforeAnyHasAnswered) {
  auto a = add("a", HookResult(hr::Continue{}), sub(HookKind::before_tool_call), true);
  auto b = add("b", HookResult(hr::Continue{}), sub(HookKind::before_tool_call), true);
  auto c = add("c", HookResult(hr::Continue{}), sub(HookKind::before_tool_call), true);
  auto verdict = start(bus, bash());
  // Asked one after another, b would wait for a's answer, which never comes unreleased.
  EXPECT_TRUE(run_until(io, [&] { return a->calls == 1 && b->calls == 1 && c->calls == 1; }));
  EXPECT_FALSE(ready(verdict));
  c->release();
  b->release();
  a->release();
  ASSERT_TRUE(run_until(io, [&] { return ready(verdict); }));
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(verdict.get().result));
}

TEST_F(HookFanOutTest, AnEarlierModifyWinsOverALaterBlockThatAnsweredFirst) {
  auto a = add("a", HookResult(hr::Modify{boost::json::parse(R"({"command":"echo safe"})")}),
               sub(HookKind::before_tool_call), true);
  auto b = add("b", HookResult(hr::Block{"no"}), sub(HookKind::before_tool_call));
  auto verdict = start(bus, bash());
  ASSERT_TRUE(run_until(io, [&] { return b->answered == 1; }));
  EXPECT_FALSE(ready(verdict)) << "b's block must wait for a, which comes first in load order";
  a->release();
  ASSERT_TRUE(run_until(io, [&] { return ready(verdict); }));
  const auto v = verdict.get();
  ASSERT_TRUE(std::holds_alternative<hr::Modify>(v.result));
  EXPECT_EQ(std::get<hr::Modify>(v.result).input, boost::json::parse(R"({"command":"echo safe"})"));
  EXPECT_EQ(v.extension_id, "a");
}

TEST_F(HookFanOutTest, InjectionsAreJoinedInLoadOrderWhateverOrderTheyArriveIn) {
  auto one = add("a", HookResult(hr::Inject{"one"}), sub(HookKind::before_message), true, llm);
  auto two = add("b", HookResult(hr::Inject{"two"}), sub(HookKind::before_message), true, llm);
  add("c", HookResult(hr::Inject{"three"}), sub(HookKind::before_message), false, llm);
  auto verdict = start(bus, message());
  ASSERT_TRUE(run_until(io, [&] { return one->calls == 1 && two->calls == 1; }));
  two->release();
  ASSERT_TRUE(run_until(io, [&] { return two->answered == 1; }));
  one->release();
  ASSERT_TRUE(run_until(io, [&] { return ready(verdict); }));
  const auto v = verdict.get();
  ASSERT_TRUE(std::holds_alternative<hr::Inject>(v.result));
  EXPECT_EQ(std::get<hr::Inject>(v.result).content, "one\n\ntwo\n\nthree");
  EXPECT_EQ(v.extension_id, "") << "joined injections are nobody's decision alone";
}

TEST_F(HookFanOutTest, ADecidedPrefixEndsTheEmitAndCancelsTheAsksStillOut) {
  add("a", HookResult(hr::Block{"no"}), sub(HookKind::before_tool_call));
  auto late = add("b", HookResult(hr::Block{"late"}), sub(HookKind::before_tool_call), true);
  const auto v = emit(bus, bash());
  EXPECT_EQ(reason_of(v), "no");
  EXPECT_EQ(v.extension_id, "a");
  EXPECT_TRUE(run_until(io, [&] { return late->cancelled; })) << "the ask nobody needs is cancelled";
  EXPECT_EQ(late->answered, 0);
}

TEST_F(HookFanOutTest, AnAbandonedEmitCancelsItsAsksButTheConcurrentEmitLetsThemFinish) {
  using namespace asio::experimental::awaitable_operators;
  auto a = add("a", HookResult(hr::Continue{}), sub(HookKind::before_tool_call), true);
  auto abandon = [&]() -> asio::awaitable<void> {
    asio::steady_timer soon(co_await asio::this_coro::executor, std::chrono::milliseconds(1));
    co_await (bus.emit(bash()) || soon.async_wait(asio::use_awaitable));
  };
  ASSERT_TRUE(run_bounded(io, abandon()));
  EXPECT_TRUE(run_until(io, [&] { return a->cancelled; }));

  const auto life = perms({Permission::session_lifecycle});
  auto observer = add("o", HookResult(hr::Continue{}), sub(HookKind::on_session_end), true, life);
  HookEvent end;
  end.kind = HookKind::on_session_end;
  auto abandon_concurrent = [&]() -> asio::awaitable<void> {
    asio::steady_timer soon(co_await asio::this_coro::executor, std::chrono::milliseconds(1));
    co_await (bus.emit_concurrent(end) || soon.async_wait(asio::use_awaitable));
  };
  ASSERT_TRUE(run_bounded(io, abandon_concurrent()));
  ASSERT_EQ(observer->calls, 1);
  observer->release();
  EXPECT_TRUE(run_until(io, [&] { return observer->answered == 1; }));
  EXPECT_FALSE(observer->cancelled);
}

TEST_F(HookFanOutTest, ASlowSubscriberHoldsTheFoldNoLongerThanTheBusDeadline) {
  HookBus quick(std::chrono::milliseconds(50));
  auto slow = add(quick, "slow", HookResult(hr::Block{"late"}), sub(HookKind::before_tool_call), true);
  add(quick, "guard", HookResult(hr::Block{"no"}), sub(HookKind::before_tool_call));
  const auto v = emit(quick, bash());
  EXPECT_EQ(reason_of(v), "no");
  EXPECT_EQ(v.extension_id, "guard");
  EXPECT_EQ(slow->answered, 0);
}

// --- failures ----------------------------------------------------------------------------

TEST_F(HookFanOutTest, AFailClosedSubscriptionBlocksWithAReasonNamingItsExtension) {
  struct Case {
    Error error;
    std::string why;
  };
  const std::vector<Case> cases = {
      {failure(ErrorCause::application, "Extension error: policy store unreachable"),
       "answered an error: policy store unreachable"},
      {failure(ErrorCause::timeout, "Extension 'guard' method 'hook.handle' timed out after 1h"),
       "did not answer within 3600 s"},
      {failure(ErrorCause::protocol, "Extension 'guard' hook.handle returned an invalid result"),
       "answered an invalid result"},
      {failure(ErrorCause::not_running, "Extension 'guard' process is not running"), "is not running"},
      {failure(ErrorCause::stopped, "Extension 'guard' was stopped"), "is not running"},
      {failure(ErrorCause::restart_exhausted, "Extension 'guard' exceeded restart limit (3)"), "is not running"},
      {failure(ErrorCause::transport, "transport closed: EOF"), "failed: transport closed: EOF"},
  };
  for (const auto& c : cases) {
    HookBus b(std::chrono::hours(1));
    add(b, "guard", c.error, sub(HookKind::before_tool_call, HookOnError::block));
    add(b, "later", HookResult(hr::Modify{boost::json::parse("{}")}), sub(HookKind::before_tool_call));
    const auto v = emit(b, bash());
    EXPECT_EQ(reason_of(v), "blocked: hook of extension 'guard' " + c.why + " (fail-closed)") << c.error.message;
    EXPECT_EQ(v.extension_id, "guard");
    EXPECT_TRUE(v.fail_closed);
  }
}

TEST_F(HookFanOutTest, TheBusDeadlineAppearsInWholeSecondsOrMilliseconds) {
  HookBus quick(std::chrono::milliseconds(50));
  add(quick, "guard", HookResult(hr::Continue{}), sub(HookKind::before_tool_call, HookOnError::block), true);
  EXPECT_EQ(reason_of(emit(quick, bash())), "blocked: hook of extension 'guard' did not answer within 50 ms (fail-closed)");

  HookBus second(std::chrono::seconds(1));
  add(second, "guard", HookResult(hr::Continue{}), sub(HookKind::before_tool_call, HookOnError::block), true);
  EXPECT_EQ(reason_of(emit(second, bash())), "blocked: hook of extension 'guard' did not answer within 1 s (fail-closed)");
}

TEST_F(HookFanOutTest, AnErrorMessageInAReasonIsBounded) {
  add("guard", failure(ErrorCause::application, "Extension error: " + std::string(10'000, 'e')),
      sub(HookKind::before_tool_call, HookOnError::block));
  EXPECT_EQ(reason_of(emit(bus, bash())), "blocked: hook of extension 'guard' answered an error: " +
                                              std::string(k_max_hook_failure_text, 'e') + "\xE2\x80\xA6 (fail-closed)");
}

TEST_F(HookFanOutTest, AContinueSubscriptionStillFailsOpenWithTheReferenceLogLine) {
  LogCapture log;
  add("flaky", failure(ErrorCause::application, "Extension error: nope"), sub(HookKind::before_tool_call));
  add("down", failure(ErrorCause::not_running, "Extension 'down' process is not running"),
      sub(HookKind::before_tool_call));
  add("next", HookResult(hr::Block{"next"}), sub(HookKind::before_tool_call));
  const auto v = emit(bus, bash());
  EXPECT_EQ(reason_of(v), "next");
  EXPECT_EQ(v.extension_id, "next");
  EXPECT_FALSE(v.fail_closed);
  EXPECT_NE(log.text().find("extension 'flaky': Extension hook handler failed — continuing: Extension error: nope"),
            std::string::npos)
      << log.text();

  HookBus quick(std::chrono::milliseconds(20));
  add(quick, "silent", HookResult(hr::Block{"late"}), sub(HookKind::before_tool_call), true);
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(quick, bash()).result));
  EXPECT_NE(log.text().find("extension 'silent': hook 'before_tool_call' timed out; continuing"), std::string::npos);
}

TEST_F(HookFanOutTest, ABusThatFailsClosedTreatsEverySubscriptionAsBlock) {
  HookBus closed(std::chrono::hours(1), std::chrono::steady_clock::now, true);
  add(closed, "flaky", failure(ErrorCause::application, "Extension error: nope"), sub(HookKind::before_tool_call));
  const auto v = emit(closed, bash());
  EXPECT_EQ(reason_of(v), "blocked: hook of extension 'flaky' answered an error: nope (fail-closed)");
  EXPECT_EQ(v.extension_id, "flaky");
}

TEST_F(HookFanOutTest, LoadOrderDecidesBetweenAFailureAndAnAnswer) {
  {
    HookBus b(std::chrono::hours(1));
    add(b, "a-guard", failure(ErrorCause::application, "Extension error: nope"),
        sub(HookKind::before_tool_call, HookOnError::block));
    add(b, "b-policy", HookResult(hr::Block{"policy"}), sub(HookKind::before_tool_call));
    const auto v = emit(b, bash());
    EXPECT_EQ(v.extension_id, "a-guard");
    EXPECT_TRUE(v.fail_closed);
  }
  {
    HookBus b(std::chrono::hours(1));
    add(b, "a-policy", HookResult(hr::Block{"policy"}), sub(HookKind::before_tool_call));
    add(b, "b-guard", failure(ErrorCause::application, "Extension error: nope"),
        sub(HookKind::before_tool_call, HookOnError::block));
    const auto v = emit(b, bash());
    EXPECT_EQ(reason_of(v), "policy");
    EXPECT_EQ(v.extension_id, "a-policy");
    EXPECT_FALSE(v.fail_closed);
  }
  {
    HookBus b(std::chrono::hours(1));
    add(b, "a-rewrite", HookResult(hr::Modify{boost::json::parse(R"({"command":"echo safe"})")}),
        sub(HookKind::before_tool_call));
    add(b, "b-guard", failure(ErrorCause::not_running, "down"), sub(HookKind::before_tool_call, HookOnError::block));
    const auto v = emit(b, bash());
    EXPECT_TRUE(std::holds_alternative<hr::Modify>(v.result)) << "an earlier modify ends the chain first";
    EXPECT_EQ(v.extension_id, "a-rewrite");
  }
}

TEST_F(HookFanOutTest, OnAKindThatCannotBlockAFailClosedFailureIsLoggedAndTheChainGoesOn) {
  LogCapture log;
  add("guard", failure(ErrorCause::application, "Extension error: nope"),
      sub(HookKind::before_message, HookOnError::block), false, llm);
  add("helper", HookResult(hr::Inject{"context"}), sub(HookKind::before_message), false, llm);
  const auto v = emit(bus, message());
  ASSERT_TRUE(std::holds_alternative<hr::Inject>(v.result));
  EXPECT_EQ(std::get<hr::Inject>(v.result).content, "context");
  EXPECT_NE(log.text().find("extension 'guard': hook 'before_message' answered an error: nope; a hook of this kind "
                            "cannot block — continuing (on_error: block)"),
            std::string::npos)
      << log.text();
}

// Suspension with a clock of the test's own.
class FailClosedSuspensionTest : public HookFanOutTest {
 protected:
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  HookBus suspending{std::chrono::milliseconds(20), [this] { return now; }};
};

TEST_F(FailClosedSuspensionTest, ASuspendedGuardBlocksWithoutBeingAskedUntilItsProbe) {
  auto guard = add(suspending, "guard", HookResult(hr::Continue{}), sub(HookKind::before_tool_call, HookOnError::block),
                   true);
  auto after = add(suspending, "after", HookResult(hr::Continue{}), sub(HookKind::before_tool_call));
  for (std::size_t i = 0; i < k_hook_suspend_after_timeouts; ++i) {
    EXPECT_EQ(reason_of(emit(suspending, bash())),
              "blocked: hook of extension 'guard' did not answer within 20 ms (fail-closed)");
  }
  ASSERT_TRUE(suspending.has_suspended("guard"));
  const int after_calls = after->calls;
  const auto v = emit(suspending, bash());
  EXPECT_EQ(reason_of(v), "blocked: hook of extension 'guard' is suspended after not answering 3 times in a row "
                          "(fail-closed)");
  EXPECT_EQ(v.extension_id, "guard");
  EXPECT_TRUE(v.fail_closed);
  EXPECT_EQ(guard->calls, 3) << "a suspended subscription is not asked";
  EXPECT_EQ(after->calls, after_calls) << "nothing after the deciding subscription is asked";

  // The probe is asked; answered, the guard is back in the chain.
  now += k_hook_suspend_interval;
  guard->release();
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit(suspending, bash()).result));
  EXPECT_EQ(guard->calls, 4);
  EXPECT_FALSE(suspending.has_suspended("guard"));
}

TEST_F(FailClosedSuspensionTest, ASuspendedFailClosedObserverIsPassedBy) {
  auto observer = add(suspending, "observer", HookResult(hr::Continue{}),
                      sub(HookKind::before_message, HookOnError::block), true, llm);
  add(suspending, "helper", HookResult(hr::Inject{"context"}), sub(HookKind::before_message), false, llm);
  for (std::size_t i = 0; i < k_hook_suspend_after_timeouts; ++i) emit(suspending, message());
  ASSERT_TRUE(suspending.has_suspended("observer"));
  const auto v = emit(suspending, message());
  ASSERT_TRUE(std::holds_alternative<hr::Inject>(v.result));
  EXPECT_EQ(std::get<hr::Inject>(v.result).content, "context");
  EXPECT_EQ(observer->calls, 3);
}

TEST(BlockedToolCall, TheErrorNamesTheExtensionWhoseHookBlocked) {
  const Error own = blocked_tool_call("tools:echo", "rm -rf is not allowed", "guard", false);
  EXPECT_EQ(own.message, "Tool 'tools:echo' blocked by hook: rm -rf is not allowed (extension 'guard')");
  EXPECT_EQ(own.kind, ErrorKind::extension);
  EXPECT_EQ(own.cause, ErrorCause::blocked);
  EXPECT_EQ(own.extension_id, "guard");

  const Error closed = blocked_tool_call(
      "tools:echo", "blocked: hook of extension 'guard' did not answer within 5 s (fail-closed)", "guard", true);
  EXPECT_EQ(closed.message,
            "Tool 'tools:echo' blocked by hook: blocked: hook of extension 'guard' did not answer within 5 s "
            "(fail-closed)");
  EXPECT_EQ(closed.cause, ErrorCause::blocked);
  EXPECT_EQ(closed.extension_id, "guard");
}

}  // namespace
}  // namespace exthost::host
