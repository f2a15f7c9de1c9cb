// Restarts, health, the worker hook path and cancellation, with real children. Includes
// the ports of the reference's lifecycle_tests and restart_policy_tests.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "../support/bounded.hpp"
#include "../support/fake_extension.hpp"
#include "../support/proc.hpp"
#include "runtime/process_extension.hpp"
#include "wire/json.hpp"
#include "wire/message.hpp"

namespace exthost {
namespace {

namespace asio = boost::asio;
using exthost::testing::run_bounded;
using exthost::testing::run_until;
using runtime::ProcessExtension;
using namespace protocol;

boost::json::value tool(const char* name) { return boost::json::parse(std::string(R"({"name":")") + name + R"(","input":{}})"); }

class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::signal(SIGPIPE, SIG_IGN);
    state_file = std::filesystem::temp_directory_path() / ("exthost-restart-" + std::to_string(::getpid()) + "-" +
                                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove(state_file);
  }
  void TearDown() override { std::filesystem::remove(state_file); }

  // The reference's lifecycle tests, ported: they run under its retry-every-call mode.
  std::shared_ptr<ProcessExtension> start(std::vector<std::string> args, runtime::Timeouts t = {},
                                          runtime::RestartPolicy policy = {}) {
    return exthost::testing::start_fake(io, std::move(args), t, policy, runtime::RetryMode::reference);
  }

  HookResult hook(ProcessExtension& ext, bool worker = false) {
    HookEvent e;
    e.kind = HookKind::after_tool_call;
    e.tool_name = "bash";
    e.tool_input = boost::json::parse(R"({"command":"ls"})");
    e.tool_output = "RAW";
    auto r = worker ? run_bounded(io, ext.handle_no_spawn(e), std::chrono::seconds(3))
                    : run_bounded(io, ext.handle(e), std::chrono::seconds(10));
    if (!r) return hook_result::Block{"(hung)"};
    if (!r->ok()) return hook_result::Continue{};  // no answer: the hook bus fails it open
    return r->value();
  }

  Lifecycle wait_failed(ProcessExtension& ext) {
    Lifecycle seen;
    EXPECT_TRUE(run_until(io, [&] {
      auto s = ext.lifecycle_snapshot();
      if (s && s->health == Health::failed) seen = *s;
      return s && s->health == Health::failed;
    })) << "lifecycle must detect failure without another RPC";
    return seen;
  }

  std::filesystem::path state_file;
  asio::io_context io;
};

bool is_replace_crushed(const HookResult& r) {
  const auto* p = std::get_if<hook_result::Replace>(&r);
  return p != nullptr && p->output == "CRUSHED";
}

// --- restart_policy_tests ---------------------------------------------------------------

TEST_F(RestartTest, RestartPolicyDefaultMaxAttemptsIsThree) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  EXPECT_EQ(ext->restart_policy().max_attempts, 3u);
  ext->force_shutdown();
}

TEST_F(RestartTest, WithRestartPolicyOverridesTheDefault) {
  runtime::RestartPolicy p;
  p.max_attempts = 7;
  auto ext = start({"echo"}, {}, p);
  ASSERT_TRUE(ext);
  EXPECT_EQ(ext->restart_policy().max_attempts, 7u);
  ext->force_shutdown();
}

// --- lifecycle_tests ----------------------------------------------------------------------

TEST_F(RestartTest, ApplicationErrorReplyNeverRestartsTheProcess) {
  auto ext = start({"unknown-method"});
  ASSERT_TRUE(ext);
  const auto before = ext->lifecycle_snapshot();
  for (const char* method : {"info.get", "no.such.method"}) {
    auto r = run_bounded(io, ext->call(method, nullptr), std::chrono::seconds(3));
    ASSERT_TRUE(r);
    ASSERT_FALSE(r->ok()) << method;
    const std::string& e = r->error().message;
    EXPECT_TRUE(wire::is_application_error(r->error())) << e;
    EXPECT_EQ(r->error().cause, ErrorCause::application) << e;
    EXPECT_EQ(r->error().code, -32601) << e;
    EXPECT_NE(e.find("unknown method"), std::string::npos) << e;
    EXPECT_EQ(e.find("retry after restart failed"), std::string::npos) << e;
  }
  EXPECT_EQ(ext->restart_count(), 0u);
  EXPECT_EQ(ext->consecutive_restarts(), 0u);
  EXPECT_EQ(ext->lifecycle_snapshot(), before);
  // A text that merely looks like one is not one: the cause decides.
  EXPECT_FALSE(wire::is_application_error(Error::extension("Extension error: made up")));
  ext->force_shutdown();
}

TEST_F(RestartTest, ActualChildExitIsDetectedWhileAnRpcHoldsTheLockAndTheReaderIsStopped) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  const auto before = ext->lifecycle_snapshot();
  ASSERT_TRUE(before);
  EXPECT_EQ(before->health, Health::running);
  auto lock = run_bounded(io, ext->scheduler().exclusive());
  ASSERT_TRUE(lock);
  auto connection = ext->connection();
  connection->abort_reader();  // nothing will observe EOF or close the inbox
  ASSERT_TRUE(run_until(io, [&] { return !connection->reader_running(); }));
  auto rpc = asio::co_spawn(io, connection->call("pending", nullptr, 900), asio::use_future);
  run_until(io, [] { return false; }, std::chrono::milliseconds(20));
  EXPECT_NE(rpc.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "the RPC must remain pending";
  EXPECT_EQ(ext->inbox().pending_count(), 1u);
  EXPECT_EQ(ext->lifecycle_snapshot(), before);
  ::kill(ext->child()->pid(), SIGKILL);
  const auto dead = wait_failed(*ext);
  EXPECT_NE(dead.generation, before->generation);
  EXPECT_EQ(ext->lifecycle_snapshot(), dead);
  EXPECT_FALSE(ext->inbox().closed());
  EXPECT_EQ(ext->inbox().pending_count(), 1u);
  lock->release();
  ext->force_shutdown();
  ASSERT_TRUE(run_until(io, [&] { return rpc.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  EXPECT_EQ(rpc.get().error().message, "transport closed: extension cancelled");
}

TEST_F(RestartTest, ShutdownInvalidatesTheGenerationBeforeWaitingForTheCallLock) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  const auto before = ext->lifecycle_snapshot();
  auto lock = run_bounded(io, ext->scheduler().exclusive());
  ASSERT_TRUE(lock);
  auto shutdown = asio::co_spawn(io, ext->shutdown(), asio::use_future);
  const auto dead = wait_failed(*ext);
  EXPECT_NE(dead.generation, before->generation);
  EXPECT_NE(shutdown.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  lock->release();
  ASSERT_TRUE(run_until(io, [&] { return shutdown.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
                        std::chrono::seconds(5)));
  EXPECT_EQ(ext->lifecycle_snapshot(), dead);
}

TEST_F(RestartTest, InPlaceRestartChangesTheGenerationAndOldInvalidationIsIsolated) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  const auto before = ext->lifecycle_snapshot();
  auto old = ext->inbox().current_lifecycle();
  auto lock = run_bounded(io, ext->scheduler().exclusive());
  ASSERT_TRUE(lock);
  auto restart = asio::co_spawn(io, ext->restart_for_test(), asio::use_future);
  // Inside the restart delay: the old generation is invalid and nothing new is live yet.
  ASSERT_TRUE(run_until(io, [&] {
    auto s = ext->lifecycle_snapshot();
    return s && s->health == Health::failed;
  }));
  const auto replacing = ext->lifecycle_snapshot();
  EXPECT_NE(replacing->generation, before->generation);
  ASSERT_TRUE(run_until(io, [&] { return restart.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
                        std::chrono::seconds(5)));
  ASSERT_TRUE(restart.get().ok());
  lock->release();
  const auto after = ext->lifecycle_snapshot();
  ASSERT_TRUE(after);
  EXPECT_NE(after->generation, before->generation);
  EXPECT_EQ(after->health, Health::degraded);
  EXPECT_EQ(old->snapshot(false)->health, Health::failed);
  old->invalidate();
  EXPECT_EQ(ext->lifecycle_snapshot(), after);
  ext->force_shutdown();
  const auto stopped = ext->lifecycle_snapshot();
  EXPECT_NE(stopped->generation, after->generation);
  EXPECT_EQ(stopped->health, Health::failed);
}

TEST_F(RestartTest, TransportEofInvalidatesTheGenerationEvenWhileTheChildIsAlive) {
  // A child that closes stdout but stays alive.
  runtime::ProcessSpec spec;
  spec.id = "lifecycle-eof";
  spec.retry = runtime::RetryMode::reference;
  spec.command = "/bin/sh";
  spec.args = {"-c", "IFS= read -r trigger; exec 1>&-; IFS= read -r hold"};
  auto r = run_bounded(io, ProcessExtension::spawn(io.get_executor(), spec));
  ASSERT_TRUE(r && r->ok());
  auto eof = std::move(*r).value();
  eof->inbox().current_lifecycle()->mark_initialized();
  const auto before = eof->lifecycle_snapshot();
  ASSERT_TRUE(run_bounded(io, eof->connection()->write("close\n")));
  const auto dead = wait_failed(*eof);
  EXPECT_NE(dead.generation, before->generation);
  EXPECT_TRUE(exthost::testing::alive(eof->child()->pid())) << "the child itself is still running";
  eof->force_shutdown();
}

TEST_F(RestartTest, AWorkerHookNeverRespawnsACrashedOrStoppedExtension) {
  auto ext = start({"replace"});
  ASSERT_TRUE(ext);
  EXPECT_TRUE(is_replace_crushed(hook(*ext, true)));
  // Crash: the child dies; the reader sees EOF and closes the inbox.
  ::kill(ext->child()->pid(), SIGKILL);
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().closed(); }));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::holds_alternative<hook_result::Continue>(hook(*ext, true))) << "crashed: pass-through";
  }
  EXPECT_EQ(ext->restart_count(), 0u) << "a worker never restarts it";
  EXPECT_TRUE(ext->inbox().closed()) << "nothing was respawned";
  // The foreground's restart-capable path brings it back; workers then use it.
  EXPECT_TRUE(is_replace_crushed(hook(*ext)));
  EXPECT_EQ(ext->restart_count(), 1u);
  EXPECT_TRUE(is_replace_crushed(hook(*ext, true)));
  // Stopped: pass-through, and still no respawn.
  ASSERT_TRUE(run_bounded(io, ext->shutdown()));
  EXPECT_TRUE(std::holds_alternative<hook_result::Continue>(hook(*ext, true)));
  EXPECT_EQ(ext->child(), nullptr);
  EXPECT_EQ(ext->restart_count(), 1u);
}

// --- the process-transport integration tests (SPEC §8.16) and issue additions ---------------

TEST_F(RestartTest, ExitsBeforeResponseThenRespawnsAndRetries) {
  auto ext = start({"crash-once", state_file.string()});
  ASSERT_TRUE(ext);
  const auto r = hook(*ext);
  ASSERT_TRUE(std::holds_alternative<hook_result::Block>(r));
  EXPECT_EQ(std::get<hook_result::Block>(r).reason, "respawned");
  EXPECT_EQ(ext->health(), Health::degraded);
  EXPECT_EQ(ext->restart_count(), 1u) << "lifetime restarts";
  EXPECT_EQ(ext->consecutive_restarts(), 0u) << "reset once the restarted child served";
  EXPECT_EQ(ext->lifecycle_snapshot()->health, Health::degraded);
  EXPECT_EQ(ext->spawn_count(), 2u);
  run_bounded(io, ext->shutdown());
}

TEST_F(RestartTest, RestartExhaustionMarksFailedFailsFastAndHooksFailOpen) {
  runtime::RestartPolicy quick;
  quick.base_delay = std::chrono::milliseconds(10);
  auto ext = start({"always-exit"}, {}, quick);
  ASSERT_TRUE(ext);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::holds_alternative<hook_result::Continue>(hook(*ext))) << "hook " << i << " fails open";
  }
  EXPECT_EQ(ext->health(), Health::failed);
  EXPECT_EQ(ext->restart_count(), 3u) << "three restarts; the refused fourth is not one";
  const std::size_t spawns = ext->spawn_count();
  // Exhausted: a call fails fast with the reference text and spawns nothing.
  auto r = run_bounded(io, ext->call("tool.call", tool("echo")), std::chrono::seconds(3));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->ok());
  EXPECT_EQ(r->error().message, "Extension 'fake' exceeded restart limit (3)");
  EXPECT_TRUE(std::holds_alternative<hook_result::Continue>(hook(*ext)));
  EXPECT_EQ(ext->spawn_count(), spawns) << "nothing was spawned after exhaustion";
  EXPECT_EQ(ext->child(), nullptr);
  EXPECT_EQ(ext->health(), Health::failed);
  run_bounded(io, ext->shutdown());
}

TEST_F(RestartTest, RestartCountReportsTransportRestarts) {
  auto ext = start({"crash-once", state_file.string()});
  ASSERT_TRUE(ext);
  EXPECT_EQ(ext->restart_count(), 0u);
  EXPECT_EQ(ext->health(), Health::running);
  auto r = run_bounded(io, ext->call("tool.call", tool("echo")));
  ASSERT_TRUE(r && r->ok()) << (r && !r->ok() ? r->error().message : "");
  EXPECT_EQ(ext->restart_count(), 1u);
  run_bounded(io, ext->shutdown());
}

TEST_F(RestartTest, TheRestartedChildIsInitializedWithTheCachedConfig) {
  runtime::ProcessSpec spec;
  spec.id = "fake";
  spec.retry = runtime::RetryMode::reference;
  spec.command = EXTHOST_FAKE_EXTENSION;
  spec.args = {"crash-once", state_file.string()};
  auto r = run_bounded(io, ProcessExtension::spawn(io.get_executor(), spec));
  ASSERT_TRUE(r && r->ok());
  auto ext = std::move(*r).value();
  auto init = run_bounded(io, ext->initialize(std::nullopt, boost::json::parse(R"({"api_key":"s3cret"})")));
  ASSERT_TRUE(init && init->ok());
  auto first = run_bounded(io, ext->call("tool.call", tool("echo")));  // crashes once, restarts
  ASSERT_TRUE(first && first->ok());
  ASSERT_EQ(ext->spawn_count(), 2u);
  auto seen = run_bounded(io, ext->call("tool.call", tool("initialize-params")));
  ASSERT_TRUE(seen && seen->ok());
  const auto& params = seen->value().as_object();
  EXPECT_EQ(wire::to_json(params.at("config")), R"({"api_key":"s3cret"})");
  EXPECT_EQ(params.at("plugin_id").as_string(), "fake");
  EXPECT_EQ(params.at("extension_protocol_version").as_int64(), 1);
  EXPECT_EQ(params.at("host").as_string(), "exthost");
  run_bounded(io, ext->shutdown());
}

TEST_F(RestartTest, ATimedOutCallLeavesNoPendingEntryAndCancelsWhenDeclared) {
  runtime::Timeouts t;
  t.tool_call = std::chrono::milliseconds(100);
  for (const bool declared : {true, false}) {
    auto ext = start({declared ? "cancellable" : "echo"}, t);
    ASSERT_TRUE(ext);
    auto slow = run_bounded(io, ext->call("tool.call", tool("slow")));
    ASSERT_TRUE(slow);
    ASSERT_FALSE(slow->ok());
    EXPECT_EQ(slow->error().kind, ErrorKind::timeout);
    EXPECT_EQ(ext->inbox().pending_count(), 0u) << "no pending entry is left behind";
    // The late reply (after 800 ms) is dropped and counted; the next call works.
    ASSERT_TRUE(run_until(io, [&] { return ext->inbox().counters().late_replies.load() == 1; }));
    auto seen = run_bounded(io, ext->call("tool.call", tool("seen-notifications")));
    ASSERT_TRUE(seen && seen->ok());
    if (declared) {
      // The slow call had id 2 (initialize was 1).
      EXPECT_EQ(wire::to_json(seen->value()), R"([{"method":"$/cancelRequest","params":{"id":2}}])");
      EXPECT_EQ(ext->inbox().counters().cancel_notifications.load(), 1u);
    } else {
      EXPECT_EQ(wire::to_json(seen->value()), "[]") << "no cancellation without the capability";
    }
    EXPECT_EQ(ext->restart_count(), 0u);
    run_bounded(io, ext->shutdown());
  }
}

TEST_F(RestartTest, CrashesAfterSuccessThenRespawnsOnTheNextHook) {
  auto ext = start({"crash-after-success", state_file.string()});
  ASSERT_TRUE(ext);
  EXPECT_TRUE(std::holds_alternative<hook_result::Continue>(hook(*ext)));
  wait_failed(*ext);  // it exited after answering
  const auto r = hook(*ext);
  ASSERT_TRUE(std::holds_alternative<hook_result::Block>(r));
  EXPECT_EQ(std::get<hook_result::Block>(r).reason, "after-crash-respawn");
  EXPECT_EQ(ext->health(), Health::degraded);
  run_bounded(io, ext->shutdown());
}

TEST_F(RestartTest, TheExtensionIsInitializedBeforeItsFirstHook) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  hook(*ext);
  auto methods = run_bounded(io, ext->call("tool.call", tool("methods")));
  ASSERT_TRUE(methods && methods->ok());
  EXPECT_EQ(wire::to_json(methods->value()), R"(["initialize","hook.handle","tool.call"])");
  run_bounded(io, ext->shutdown());
}

TEST_F(RestartTest, ALeasedCallIsServedAndPutsTheChildBack) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  auto r = run_bounded(io, ext->call_tool_once_no_spawn("echo", boost::json::parse("[1]"), std::nullopt, std::nullopt,
                                                        std::nullopt));
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(wire::to_json(r->value()), R"({"content":[1]})");
  EXPECT_NE(ext->child(), nullptr);
  run_bounded(io, ext->shutdown());
  auto refused = run_bounded(io, ext->call_tool_once_no_spawn("echo", nullptr, std::nullopt, std::nullopt, std::nullopt));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error().message, "Extension 'fake' process is not running; leased call refused (no respawn)");
}

TEST_F(RestartTest, AConcurrentForceShutdownFailsALeasedCall) {
  auto ext = start({"slow-call", "60000"});
  ASSERT_TRUE(ext);
  const pid_t pid = ext->child()->pid();
  auto leased = asio::co_spawn(
      io, ext->call_tool_once_no_spawn("echo", nullptr, std::nullopt, std::nullopt, std::nullopt), asio::use_future);
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().pending_count() == 1; }));
  EXPECT_EQ(ext->child(), nullptr) << "the state is out of the slot while the call waits";
  ext->force_shutdown();
  ASSERT_TRUE(run_until(io, [&] { return leased.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  auto r = leased.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "transport closed: extension cancelled");
  EXPECT_EQ(ext->child(), nullptr) << "a cancelled lease is not put back";
  ASSERT_TRUE(run_until(io, [&] { return !exthost::testing::alive(pid); }));
  EXPECT_EQ(ext->restart_count(), 0u);
}


// --- the lifecycle machine's shell, with real children ---------------------------------------

// Unloading a crash-looping extension while its restarted child is still initializing:
// the restart's initialize used to resume on a child state that shutdown() had freed.
TEST_F(RestartTest, ShutdownDuringARestartInitializeEndsEverythingAndFreesNothingInUse) {
  auto ext = start({"crash-loop-slow-init", state_file.string()});
  ASSERT_TRUE(ext);
  auto call = asio::co_spawn(io, ext->call("tool.call", tool("echo")), asio::use_future);
  // The crash, the backoff, then the restarted child's slow handshake.
  ASSERT_TRUE(run_until(io, [&] { return ext->spawn_count() == 2; }, std::chrono::seconds(5)));
  const pid_t restarted = ext->child()->pid();
  auto stop = asio::co_spawn(io, ext->shutdown(), asio::use_future);
  ASSERT_TRUE(run_until(io, [&] {
    return stop.wait_for(std::chrono::seconds(0)) == std::future_status::ready &&
           call.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }, std::chrono::seconds(10)));
  auto r = call.get();
  ASSERT_FALSE(r.ok());
  // Past the restarted child's slow answer: nothing comes back to life.
  run_until(io, [] { return false; }, std::chrono::milliseconds(1500));
  EXPECT_EQ(ext->spawn_count(), 2u);
  EXPECT_EQ(ext->child(), nullptr);
  EXPECT_FALSE(exthost::testing::alive(restarted));
  EXPECT_EQ(ext->life_state(), runtime::LifeState::stopped);
}

// An unload during the restart delay used to be followed by a respawn and a full
// initialize once the delay ended.
TEST_F(RestartTest, NothingIsRespawnedAfterAShutdownDuringTheRestartDelay) {
  runtime::RestartPolicy slow;
  slow.base_delay = std::chrono::milliseconds(600);
  auto ext = start({"always-exit"}, {}, slow);
  ASSERT_TRUE(ext);
  auto call = asio::co_spawn(io, ext->call("tool.call", tool("echo")), asio::use_future);
  ASSERT_TRUE(run_until(io, [&] { return ext->restart_count() == 1; }, std::chrono::seconds(5)));
  const std::size_t spawns = ext->spawn_count();
  ASSERT_TRUE(run_bounded(io, ext->shutdown(), std::chrono::seconds(5)));
  run_until(io, [] { return false; }, std::chrono::milliseconds(1200));
  EXPECT_EQ(ext->spawn_count(), spawns) << "respawned after shutdown";
  EXPECT_EQ(ext->child(), nullptr);
  ASSERT_TRUE(run_until(io, [&] { return call.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  auto r = call.get();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("was stopped"), std::string::npos) << r.error().message;
}

// A stopped child (SIGSTOP) used to stay `running` forever, every call waiting out its deadline.
TEST_F(RestartTest, AFrozenChildIsReportedUnresponsiveAndRestarted) {
  runtime::Timeouts quick;
  quick.tool_call = std::chrono::milliseconds(300);
  runtime::RestartPolicy policy;
  policy.base_delay = std::chrono::milliseconds(400);
  auto ext = start({"echo"}, quick, policy);
  ASSERT_TRUE(ext);
  const pid_t frozen = ext->child()->pid();
  ASSERT_EQ(::kill(frozen, SIGSTOP), 0);
  for (std::uint32_t i = 0; i < runtime::k_unresponsive_after_timeouts; ++i) {
    auto r = run_bounded(io, ext->call("tool.call", tool("echo")), std::chrono::seconds(5));
    ASSERT_TRUE(r);
    ASSERT_FALSE(r->ok());
    EXPECT_EQ(r->error().kind, ErrorKind::timeout);
  }
  EXPECT_EQ(ext->health(), Health::unresponsive);
  ASSERT_TRUE(run_until(io, [&] { return !exthost::testing::alive(frozen); }, std::chrono::seconds(5)))
      << "the frozen child is killed";
  ASSERT_TRUE(run_until(io, [&] { return ext->life_state() == runtime::LifeState::running && ext->spawn_count() == 2; },
                        std::chrono::seconds(5)))
      << "restarted without waiting for another call";
  auto served = run_bounded(io, ext->call("tool.call", tool("echo")), std::chrono::seconds(5));
  ASSERT_TRUE(served && served->ok()) << (served && !served->ok() ? served->error().message : "");
  EXPECT_EQ(ext->spawn_count(), 2u);
  EXPECT_EQ(ext->health(), Health::degraded);
  run_bounded(io, ext->shutdown());
}

// Stopping cancels the calls in flight: an extension that declared cancellation hears of
// each before its shutdown.
TEST_F(RestartTest, ShutdownSendsCancelRequestsForCallsInFlight) {
  runtime::Timeouts patient;  // the shutdown request waits for the slow tool's answer
  patient.shutdown_request = std::chrono::milliseconds(3000);
  auto ext = start({"cancellable", state_file.string()}, patient);
  ASSERT_TRUE(ext);
  auto slow = asio::co_spawn(io, ext->call("tool.call", tool("slow")), asio::use_future);
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().pending_count() == 1; }));
  const auto id = ext->inbox().pending_ids().front();
  ASSERT_TRUE(run_bounded(io, ext->shutdown(), std::chrono::seconds(5)));
  ASSERT_TRUE(run_until(io, [&] { return slow.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  std::ifstream in(state_file);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find(R"({"method":"$/cancelRequest","params":{"id":)" + std::to_string(id) + "}}"), std::string::npos)
      << all;
}

// A slow tool holding the call lock does not make hooks queued behind it count as the
// child's timeouts: only requests the child received do.
TEST_F(RestartTest, CallsThatNeverReachedTheChildDoNotMakeItUnresponsive) {
  runtime::Timeouts t;
  t.hook = std::chrono::milliseconds(100);
  auto ext = start({"slow-call", "1500"}, t);
  ASSERT_TRUE(ext);
  auto slow = asio::co_spawn(io, ext->call("tool.call", tool("echo")), asio::use_future);
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().pending_count() == 1; }));
  for (std::uint32_t i = 0; i < runtime::k_unresponsive_after_timeouts + 1; ++i) {
    auto r = run_bounded(io, ext->call("hook.handle", nullptr), std::chrono::seconds(3));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error().kind, ErrorKind::timeout);
  }
  ASSERT_TRUE(run_until(io, [&] { return slow.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
                        std::chrono::seconds(5)));
  EXPECT_TRUE(slow.get().ok());
  EXPECT_EQ(ext->spawn_count(), 1u);
  EXPECT_EQ(ext->health(), Health::running);
  run_bounded(io, ext->shutdown());
}

}  // namespace
}  // namespace exthost
