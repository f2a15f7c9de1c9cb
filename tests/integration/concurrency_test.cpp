// Calls side by side, retries that never repeat a side effect, progress that keeps a call
// alive, cancellation from the caller, and the extension's own error codes — through the
// public Host API, against real children (tests/fixtures/concurrent_extension.cpp).
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <stop_token>
#include <string>
#include <thread>

#include "exthost/asio.hpp"
#include "exthost/host.hpp"
#include "../support/plugin_dir.hpp"
#include "../support/within.hpp"

namespace {

using namespace std::chrono_literals;
using exthost::testing::eventually;
using exthost::testing::finishes_within;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

class ConcurrencyTest : public ::testing::Test {
 protected:
  TempRoot root{"concurrency"};

  exthost::HostOptions options() { return exthost::testing::isolated_options(root.path() / "home"); }

  std::filesystem::path plugin(const std::string& name, std::vector<std::string> args,
                               const std::string& extra = R"({"permissions":["tools.register"]})") {
    std::filesystem::create_directories(root.path() / "state" / name);
    args.push_back("--state");
    args.push_back((root.path() / "state" / name).string());
    return write_fake_plugin(root.path() / "plugins", name, args, extra, EXTHOST_CONCURRENT_EXTENSION);
  }
  std::filesystem::path state(const std::string& name) { return root.path() / "state" / name; }

  static std::size_t lines_of(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
};

constexpr const char* k_guard_manifest =
    R"({"permissions":["tools.register","tools.intercept"],"hooks":[{"hook":"before_tool_call"}]})";

TEST_F(ConcurrencyTest, AGuardBusyWithALongToolStillBlocksADangerousCallWhenItDeclaresConcurrency) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("guard", {"--concurrency", "4"}, k_guard_manifest)));
  ASSERT_TRUE(host.load(plugin("worker", {})));
  // The guard's own 9 s tool runs; its hook must still answer, not fail open at 5 s.
  std::promise<exthost::Result<std::string>> long_call;
  host.call_named_tool("guard:sleep", R"({"ms":9000})", {},
                       [&](exthost::Result<std::string> r) { long_call.set_value(std::move(r)); });
  std::this_thread::sleep_for(100ms);  // let the long tool reach the guard first
  exthost::Result<std::string> r = exthost::Error::usage("not run");
  ASSERT_TRUE(finishes_within(20s, [&] { r = host.call_tool("worker", "sleep", R"({"ms":0,"cmd":"rm -rf /"})"); }));
  ASSERT_FALSE(r) << "the dangerous call went through";
  EXPECT_EQ(r.error().cause, exthost::ErrorCause::blocked) << r.error().message;
  EXPECT_NE(r.error().message.find("dangerous command"), std::string::npos) << r.error().message;
  // A harmless call goes through while the long tool still runs.
  auto harmless = host.call_tool("worker", "sleep", R"({"ms":0})");
  EXPECT_TRUE(harmless) << harmless.error().message;
  auto done = long_call.get_future();
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(done.get());
}

TEST_F(ConcurrencyTest, AGuardBusyWithALongToolAndNoConcurrencyBlocksAfterItsDeadlineWhenFailClosed) {
  auto o = options();
  o.hook_timeout = 500ms;  // the guard's hook deadline
  exthost::Host host(o);
  ASSERT_TRUE(host.load(plugin(
      "guard", {}, R"({"permissions":["tools.register","tools.intercept"],"hooks":[{"hook":"before_tool_call","on_error":"block"}]})")));
  ASSERT_TRUE(host.load(plugin("worker", {})));
  // One request at a time: the hook waits in the guard's pipe behind its 3 s tool.
  std::promise<exthost::Result<std::string>> long_call;
  host.call_named_tool("guard:sleep", R"({"ms":3000})", {},
                       [&](exthost::Result<std::string> r) { long_call.set_value(std::move(r)); });
  std::this_thread::sleep_for(100ms);
  exthost::Result<std::string> r = exthost::Error::usage("not run");
  ASSERT_TRUE(finishes_within(20s, [&] { r = host.call_tool("worker", "sleep", R"({"ms":0,"cmd":"rm -rf /"})"); }));
  ASSERT_FALSE(r) << "a fail-closed guard that cannot answer in time must not let the call through";
  EXPECT_EQ(r.error().cause, exthost::ErrorCause::blocked) << r.error().message;
  EXPECT_EQ(r.error().extension_id, "guard");
  EXPECT_NE(r.error().message.find("blocked: hook of extension 'guard' did not answer within 500 ms (fail-closed)"),
            std::string::npos)
      << r.error().message;
  auto done = long_call.get_future();
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(done.get()) << "the guard's own tool is unaffected";
}

// Hooks that time out while waiting in the host for a place (every place taken by the
// guard's own long tools) never reached the guard: they fail like any timeout, but do not
// suspend it, so once it is free again it is asked, and blocks.
TEST_F(ConcurrencyTest, HookTimeoutsThatNeverReachedABusyGuardDoNotSuspendIt) {
  auto o = options();
  o.hook_timeout = 300ms;
  exthost::Host host(o);
  ASSERT_TRUE(host.load(plugin("guard", {"--concurrency", "2"}, k_guard_manifest)));
  ASSERT_TRUE(host.load(plugin("worker", {})));
  std::vector<std::promise<exthost::Result<std::string>>> long_calls(2);
  for (auto& p : long_calls) {
    host.call_named_tool("guard:sleep", R"({"ms":2500})", {}, [&p](exthost::Result<std::string> r) { p.set_value(std::move(r)); });
  }
  std::this_thread::sleep_for(200ms);  // both places taken
  for (int i = 0; i < 3; ++i) {
    auto r = host.call_tool("worker", "sleep", R"({"ms":0})");
    EXPECT_TRUE(r) << "fail-open: the call runs; " << r.error().message;
  }
  for (auto& p : long_calls) {
    auto f = p.get_future();
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    EXPECT_TRUE(f.get());
  }
  auto dangerous = host.call_tool("worker", "sleep", R"({"ms":0,"cmd":"rm -rf /"})");
  ASSERT_FALSE(dangerous) << "the guard was suspended by timeouts it never saw";
  EXPECT_EQ(dangerous.error().cause, exthost::ErrorCause::blocked) << dangerous.error().message;
}

// A declared concurrency of 1 holds requests back in the host: one cancelled while it waits
// is never written to the child (the undeclared default writes every request at once).
TEST_F(ConcurrencyTest, ADeclaredConcurrencyOfOneHoldsRequestsInTheHost) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("one", {"--concurrency", "1"})));
  EXPECT_EQ(host.extension_info("one")->concurrency, 1u);
  std::promise<exthost::Result<std::string>> first;
  host.call_named_tool("one:sleep", R"({"ms":800})", {}, [&](exthost::Result<std::string> r) { first.set_value(std::move(r)); });
  std::this_thread::sleep_for(100ms);
  std::stop_source source;
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    source.request_stop();
  });
  auto queued = host.call_tool("one", "sleep", R"({"ms":0})", {}, source.get_token());
  canceller.join();
  ASSERT_FALSE(queued);
  EXPECT_EQ(queued.error().kind, exthost::ErrorKind::cancelled) << queued.error().message;
  auto f = first.get_future();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(f.get());
  auto served = host.call_tool("one", "served", "{}");
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(*served, "2") << "the cancelled request reached the child";
}

// A sequential guard busy with its own tool reads nothing meanwhile. A hook event too large
// for the pipe (a tool input over 64 KiB) waits in the write queue until the hook's
// deadline: the hook fails open, and the guard, which is working, is not taken for one that
// stopped reading.
TEST_F(ConcurrencyTest, ALargeHookEventThatTimesOutBehindABusyGuardDoesNotEndTheGuard) {
  auto o = options();
  o.hook_timeout = 500ms;
  exthost::Host host(o);
  ASSERT_TRUE(host.load(plugin("guard", {}, k_guard_manifest)));
  ASSERT_TRUE(host.load(plugin("worker", {})));
  const auto pid = host.child_pid("guard");
  std::promise<exthost::Result<std::string>> long_call;
  host.call_named_tool("guard:sleep", R"({"ms":2500})", {}, [&](exthost::Result<std::string> r) { long_call.set_value(std::move(r)); });
  std::this_thread::sleep_for(200ms);
  const std::string big = R"({"ms":0,"pad":")" + std::string(100 * 1024, 'x') + R"("})";
  auto r = host.call_tool("worker", "sleep", big);
  EXPECT_TRUE(r) << "fail-open: " << r.error().message;
  auto f = long_call.get_future();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  auto done = f.get();
  EXPECT_TRUE(done) << "the guard's own call was ended: " << done.error().message;
  EXPECT_EQ(host.child_pid("guard"), pid) << "the working guard was killed";
  EXPECT_EQ(host.extension_info("guard")->restart_count, 0u);
}

TEST_F(ConcurrencyTest, NoMoreRequestsThanDeclaredAreInFlightAndAllAreAnswered) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("pair", {"--concurrency", "2"})));
  std::vector<std::promise<exthost::Result<std::string>>> calls(6);
  for (auto& p : calls) {
    host.call_named_tool("pair:sleep", R"({"ms":200})", {}, [&p](exthost::Result<std::string> r) { p.set_value(std::move(r)); });
  }
  for (auto& p : calls) {
    auto f = p.get_future();
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    auto r = f.get();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, R"({"slept":200})");
  }
  auto peak = host.call_tool("pair", "peak", "{}");
  ASSERT_TRUE(peak) << peak.error().message;
  EXPECT_EQ(*peak, "2") << "six calls at once, two in flight at most";
}

TEST_F(ConcurrencyTest, AnOutOfRangeConcurrencyIsRefusedAtLoadWithAClearError) {
  exthost::Host host(options());
  auto r = host.load(plugin("greedy", {"--concurrency", "65"}));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("capabilities.concurrency must be an integer from 1 to 64"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("'greedy'"), std::string::npos) << r.error().message;
}

TEST_F(ConcurrencyTest, ASideEffectRunsExactlyOnceWhenItsChildCrashesMidCall) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("writer", {})));
  auto r = host.call_tool("writer", "write_then_crash", R"({"text":"once"})");
  ASSERT_FALSE(r) << "the crash must reach the caller";
  EXPECT_EQ(r.error().cause, exthost::ErrorCause::transport) << r.error().message;
  EXPECT_EQ(r.error().extension_id, "writer");
  EXPECT_NE(r.error().message.find("exited with status 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("not declared idempotent"), std::string::npos) << r.error().message;
  EXPECT_EQ(lines_of(state("writer") / "side-effects"), 1u) << "the tool ran again after the restart";
  // The next call restarts the extension and is answered.
  std::ofstream(state("writer") / "survive") << "1";
  auto again = host.call_tool("writer", "write_then_crash", R"({"text":"twice"})");
  EXPECT_TRUE(again) << again.error().message;
  EXPECT_EQ(lines_of(state("writer") / "side-effects"), 2u);
}

// Under the reference's one-at-a-time lane, a second call is written to the pipe behind the
// first; when the first crashes the child, the second is not run again, and says why.
TEST_F(ConcurrencyTest, ACallQueuedBehindACrashSaysSoAndIsNotRunAgain) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("writer", {})));
  std::promise<exthost::Result<std::string>> crashing, queued;
  host.call_named_tool("writer:write_then_crash", R"({"text":"first","delay_ms":500})", {},
                       [&](exthost::Result<std::string> r) { crashing.set_value(std::move(r)); });
  std::this_thread::sleep_for(100ms);
  host.call_named_tool("writer:write_then_crash", R"({"text":"second"})", {},
                       [&](exthost::Result<std::string> r) { queued.set_value(std::move(r)); });
  auto first = crashing.get_future(), second = queued.get_future();
  ASSERT_EQ(first.wait_for(30s), std::future_status::ready);
  ASSERT_EQ(second.wait_for(30s), std::future_status::ready);
  auto a = first.get(), b = second.get();
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("not retried: tool 'write_then_crash' is not declared idempotent"),
            std::string::npos)
      << a.error().message;
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("not run again: it was queued behind other requests on the child that ended"),
            std::string::npos)
      << b.error().message;
  EXPECT_NE(b.error().message.find("exited with status 3"), std::string::npos) << b.error().message;
  EXPECT_EQ(lines_of(state("writer") / "side-effects"), 1u) << "only the first call ran";
}

TEST_F(ConcurrencyTest, AnIdempotentToolIsRetriedOnTheRestartedChild) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("reader", {})));
  auto r = host.call_tool("reader", "read_then_crash", "{}");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, R"("read")");
  EXPECT_EQ(lines_of(state("reader") / "reads"), 2u) << "run once, crashed, run again on the new child";
  EXPECT_EQ(host.extension_info("reader")->restart_count, 1u);
}

TEST_F(ConcurrencyTest, UnderTheReferenceRetryModeEveryCallIsRetried) {
  auto o = options();
  o.retry = exthost::RetryMode::reference;
  exthost::Host host(o);
  ASSERT_TRUE(host.load(plugin("writer", {})));
  // The first run writes and crashes; the retry on the restarted child writes again and
  // crashes again: the side effect ran twice, as under the reference.
  auto r = host.call_tool("writer", "write_then_crash", R"({"text":"x"})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("retry after restart failed"), std::string::npos) << r.error().message;
  // The failed retry still says whose child ended and how.
  EXPECT_NE(r.error().message.find("extension 'writer' exited with status 3"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().extension_id, "writer");
  EXPECT_EQ(lines_of(state("writer") / "side-effects"), 2u);
}

TEST_F(ConcurrencyTest, ProgressKeepsACallAliveUpToItsTotalLimit) {
  auto o = options();
  o.tool_call_timeout = 1s;
  exthost::Host host(o);
  ASSERT_TRUE(host.load(plugin("busy", {"--concurrency", "2"})));
  // 2.5 s of work with progress every 200 ms: longer than the 1 s deadline, never idle 1 s.
  auto alive = host.call_tool("busy", "progress", R"({"ms":2500,"every":200})");
  EXPECT_TRUE(alive) << alive.error().message;
  // The same time without progress: the deadline ends it.
  auto silent = host.call_tool("busy", "sleep", R"({"ms":2500})");
  ASSERT_FALSE(silent);
  EXPECT_EQ(silent.error().cause, exthost::ErrorCause::timeout) << silent.error().message;
  EXPECT_NE(silent.error().message.find("timed out after 1s"), std::string::npos) << silent.error().message;
  // Progress forever still ends at 4 times the deadline.
  auto endless = host.call_tool("busy", "progress", R"({"ms":8000,"every":200})");
  ASSERT_FALSE(endless);
  EXPECT_NE(endless.error().message.find("ran past its total limit of 4s"), std::string::npos)
      << endless.error().message;
}

// Three calls in a row that reach their total limit while reporting progress: the child was
// working all along, so it is not unresponsive and is not killed.
TEST_F(ConcurrencyTest, CallsEndedByTheTotalLimitWhileReportingProgressDoNotMakeAChildUnresponsive) {
  auto o = options();
  o.tool_call_timeout = 300ms;
  exthost::Host host(o);
  ASSERT_TRUE(host.load(plugin("busy", {"--concurrency", "2"})));
  const auto pid = host.child_pid("busy");
  for (int i = 0; i < 3; ++i) {
    auto r = host.call_tool("busy", "progress", R"({"ms":3000,"every":100})");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("ran past its total limit"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(host.extension_info("busy")->restart_count, 0u);
  EXPECT_EQ(host.child_pid("busy"), pid) << "the working child was killed";
}

TEST_F(ConcurrencyTest, AStopTokenCancelsACallAndTheExtensionHearsOfIt) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("slow", {"--concurrency", "4", "--cancellation"})));
  std::stop_source source;
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    source.request_stop();
  });
  exthost::Result<std::string> r = exthost::Error::usage("not run");
  ASSERT_TRUE(finishes_within(20s, [&] { r = host.call_tool("slow", "sleep", R"({"ms":30000})", {}, source.get_token()); }));
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, exthost::ErrorKind::cancelled) << r.error().message;
  EXPECT_EQ(r.error().cause, exthost::ErrorCause::cancelled);
  EXPECT_NE(r.error().message.find("was cancelled"), std::string::npos) << r.error().message;
  // The extension received "$/cancelRequest" for its own request id.
  std::string seen;
  ASSERT_TRUE(eventually([&] {
    auto c = host.call_tool("slow", "cancelled", "{}");
    seen = c ? *c : c.error().message;
    return c && *c != "[]";
  }));
  const auto ids = boost::json::parse(seen).as_array();
  ASSERT_EQ(ids.size(), 1u) << seen;
  EXPECT_TRUE(ids[0].is_number()) << seen;
  // Nothing counts against the extension.
  EXPECT_EQ(host.health("slow"), exthost::Health::running);
  EXPECT_EQ(host.extension_info("slow")->restart_count, 0u);
  // A token stopped before the call starts cancels at once.
  std::stop_source already;
  already.request_stop();
  auto at_once = host.call_tool("slow", "sleep", R"({"ms":0})", {}, already.get_token());
  ASSERT_FALSE(at_once);
  EXPECT_EQ(at_once.error().kind, exthost::ErrorKind::cancelled);
}

TEST_F(ConcurrencyTest, AsioPerOperationCancellationCancelsACall) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("slow", {"--concurrency", "2", "--cancellation"})));
  boost::asio::io_context io;
  boost::asio::cancellation_signal signal;
  std::optional<exthost::Result<std::string>> result;
  exthost::async_call_tool(host, "slow:sleep", R"({"ms":30000})", {},
                           boost::asio::bind_cancellation_slot(
                               signal.slot(), boost::asio::bind_executor(io, [&](exthost::Result<std::string> r) {
                                 result = std::move(r);
                               })));
  boost::asio::steady_timer later(io, 200ms);
  later.async_wait([&](const boost::system::error_code&) { signal.emit(boost::asio::cancellation_type::terminal); });
  ASSERT_TRUE(finishes_within(20s, [&] { io.run(); }));
  ASSERT_TRUE(result);
  ASSERT_FALSE(*result);
  EXPECT_EQ(result->error().kind, exthost::ErrorKind::cancelled) << result->error().message;
}

TEST_F(ConcurrencyTest, TheExtensionsOwnErrorCodeAndDataReachTheCaller) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("picky", {})));
  auto r = host.call_tool("picky", "fail", R"({"code":-32050,"message":"quota exceeded","data":{"retry_after":3}})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().cause, exthost::ErrorCause::application);
  EXPECT_EQ(r.error().code, -32050);
  EXPECT_EQ(r.error().data_json, std::optional<std::string>(R"({"retry_after":3})"));
  EXPECT_EQ(r.error().extension_id, "picky");
  EXPECT_NE(r.error().message.find("quota exceeded"), std::string::npos) << r.error().message;
  EXPECT_EQ(host.extension_info("picky")->restart_count, 0u);
}

TEST_F(ConcurrencyTest, AReferenceExtensionWithoutConcurrencyGetsEveryRequestInCallOrder) {
  exthost::Host host(options());
  ASSERT_TRUE(host.load(plugin("serial", {})));
  std::vector<std::promise<exthost::Result<std::string>>> calls(5);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    host.call_named_tool("serial:sleep", R"({"ms":)" + std::to_string(50 + i) + "}", {},
                         [p = &calls[i]](exthost::Result<std::string> r) { p->set_value(std::move(r)); });
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    auto f = calls[i].get_future();
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    auto r = f.get();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, R"({"slept":)" + std::to_string(50 + i) + "}");
  }
  auto peak = host.call_tool("serial", "peak", "{}");
  ASSERT_TRUE(peak);
  EXPECT_EQ(*peak, "1");
}

}  // namespace
