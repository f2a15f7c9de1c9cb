// Integration tests of the transport core: real children (the fake extension).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/parse.hpp>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/wait.h>

#include "../support/bounded.hpp"
#include "../support/fake_extension.hpp"
#include "../support/proc.hpp"
#include "runtime/process_extension.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using exthost::testing::run_bounded;
using exthost::testing::run_until;
using runtime::ProcessExtension;

class ProcessExtensionTest : public ::testing::Test {
 protected:
  void SetUp() override { std::signal(SIGPIPE, SIG_IGN); }

  std::shared_ptr<ProcessExtension> spawn(std::vector<std::string> args, runtime::Timeouts t = {}) {
    return exthost::testing::spawn_fake(io, std::move(args), t);
  }

  std::shared_ptr<ProcessExtension> start(std::vector<std::string> args, runtime::Timeouts t = {}) {
    return exthost::testing::start_fake(io, std::move(args), t);
  }

  void stop(const std::shared_ptr<ProcessExtension>& ext) { run_bounded(io, ext->shutdown()); }

  asio::io_context io;
};

TEST_F(ProcessExtensionTest, RoundTripsAToolCall) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  auto r = run_bounded(io, ext->call_tool_for("echo", boost::json::parse(R"({"text":"hi"})"), std::nullopt, std::nullopt));
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(wire::to_json(r->value()), R"({"content":{"text":"hi"}})");
  auto snap = ext->lifecycle_snapshot();
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->generation, 2u);
  EXPECT_EQ(snap->health, Health::running);
  stop(ext);
  EXPECT_EQ(ext->lifecycle_snapshot()->health, Health::failed);
}

TEST_F(ProcessExtensionTest, AFrameLargerThanThePipeIsWrittenWholeAndInOrder) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  // 1 MiB: far past the pipe's buffer, so the writer must finish it across many writes while
  // a second, small call waits behind it.
  boost::json::object big;
  big["text"] = std::string(1 << 20, 'b');
  auto first = asio::co_spawn(io, ext->call_tool_for("echo", big, std::nullopt, std::nullopt), asio::use_future);
  auto second = asio::co_spawn(io, ext->call_tool_for("echo", boost::json::parse("[2]"), std::nullopt, std::nullopt),
                               asio::use_future);
  ASSERT_TRUE(run_until(io, [&] { return second.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
                        std::chrono::seconds(30)));
  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value().as_object().at("content").as_object().at("text").as_string().size(), 1u << 20);
  EXPECT_EQ(wire::to_json(b.value()), R"({"content":[2]})");
  stop(ext);
}

TEST_F(ProcessExtensionTest, InterleavedNotificationsReachASubscriberInOrder) {
  auto ext = start({"notify", "40"});
  ASSERT_TRUE(ext);
  auto sub = ext->subscribe_notifications();
  std::vector<std::int64_t> seen;
  auto drain = [&]() -> asio::awaitable<void> {
    while (seen.size() < 40) {
      auto frame = co_await sub.queue().pop();
      if (!frame) co_return;
      EXPECT_EQ(frame->method, "test.notify");
      seen.push_back(frame->params.as_object().at("index").as_int64());
    }
  };
  auto both = [&]() -> asio::awaitable<Result<boost::json::value>> {
    // `&&` with a void operand yields the other operand's value.
    co_return co_await (ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")) && drain());
  };
  auto r = run_bounded(io, both());
  ASSERT_TRUE(r && r->ok());
  ASSERT_EQ(seen.size(), 40u);
  for (std::int64_t i = 0; i < 40; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
  stop(ext);
}

TEST_F(ProcessExtensionTest, InboundRequestsAreAnsweredWithTheirOwnIds) {
  auto ext = start({"inbound"});
  ASSERT_TRUE(ext);
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":{}})")));
  ASSERT_TRUE(r && r->ok()) << (r && !r->ok() ? r->error().message : "");
  EXPECT_EQ(wire::to_json(r->value()),
            R"({"replies":[{"jsonrpc":"2.0","id":"evt-1000","error":{"code":-32601,"message":"method not found: no.such.method"}},)"
            R"({"jsonrpc":"2.0","id":1001,"error":{"code":-32601,"message":"method not found: no.such.method"}}]})");
  stop(ext);
}

// Answers every inbound request after a short wait, as a slow store would.
class SlowInbound final : public rpc::InboundHandler {
 public:
  asio::awaitable<rpc::InboundReply> handle(std::string, boost::json::value) override {
    asio::steady_timer wait(co_await asio::this_coro::executor, std::chrono::milliseconds(2));
    co_await wait.async_wait(asio::use_awaitable);
    co_return rpc::InboundReply::ok(boost::json::object());
  }
};

TEST_F(ProcessExtensionTest, AFloodOfInboundRequestsIsServedWithBoundedConcurrency) {
  auto ext = start({"inbound-flood", "300"});
  ASSERT_TRUE(ext);
  ext->set_inbound_handler(std::make_shared<SlowInbound>());
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":{}})")));
  ASSERT_TRUE(r && r->ok()) << (r && !r->ok() ? r->error().message : "");
  EXPECT_EQ(wire::to_json(r->value()), R"({"replies":300,"every_id_once":true})");
  const auto peak = ext->inbox().counters().inbound_in_flight_peak.load();
  EXPECT_EQ(peak, rpc::k_max_inbound_in_flight) << "never more than the bound at once";
  EXPECT_EQ(ext->inbox().inbound_in_flight(), 0u);
  stop(ext);
}

TEST_F(ProcessExtensionTest, EofFailsThePendingCallWithTransportClosed) {
  auto ext = start({"eof-on-call"});
  ASSERT_TRUE(ext);
  auto r = run_bounded(io, ext->call_no_spawn("tool.call", boost::json::parse(R"({"name":"echo","input":{}})")));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->ok());
  EXPECT_EQ(r->error().message, "transport closed: EOF");
  EXPECT_EQ(ext->lifecycle_snapshot()->health, Health::failed);
  stop(ext);
}

TEST_F(ProcessExtensionTest, AKilledChildIsSeenByTheSnapshotWithoutAnotherCall) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  const auto before = ext->lifecycle_snapshot();
  ASSERT_TRUE(before);
  EXPECT_EQ(before->health, Health::running);
  ::kill(ext->child()->pid(), SIGKILL);
  // No RPC: only the probe (and the reaper on the I/O thread) may notice.
  ASSERT_TRUE(run_until(io, [&] {
    auto s = ext->lifecycle_snapshot();
    return s && s->health == Health::failed;
  }));
  const auto after = ext->lifecycle_snapshot();
  EXPECT_EQ(after->generation, before->generation | 1);
  stop(ext);
}

TEST_F(ProcessExtensionTest, TheSnapshotSeesAnExitEvenBeforeTheReaperRuns) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  const pid_t pid = ext->child()->pid();
  ::kill(pid, SIGKILL);
  // Wait for the kernel, not for our I/O thread: the context does not run here.
  for (int i = 0; i < 1000 && exthost::testing::proc_state(pid) != 'Z'; ++i) ::usleep(2000);
  auto s = ext->lifecycle_snapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->health, Health::failed);
  stop(ext);
}

TEST_F(ProcessExtensionTest, AHostSecretIsInvisibleToTheChild) {
  ::setenv("EXTHOST_TEST_SECRET_TOKEN", "hunter2", 1);
  ::setenv("LD_PRELOAD", "", 1);
  auto ext = start({"env"});
  ::unsetenv("EXTHOST_TEST_SECRET_TOKEN");
  ::unsetenv("LD_PRELOAD");
  ASSERT_TRUE(ext);
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"env","input":{}})")));
  ASSERT_TRUE(r && r->ok());
  const auto& env = r->value().as_object();
  EXPECT_FALSE(env.contains("EXTHOST_TEST_SECRET_TOKEN"));
  EXPECT_FALSE(env.contains("LD_PRELOAD"));
  for (const auto& [key, value] : env) {
    const std::string k(key);
    EXPECT_TRUE(k == "PATH" || k == "HOME" || k == "LANG" || k == "TERM" || k == "XDG_RUNTIME_DIR") << k;
  }
  EXPECT_TRUE(env.contains("PATH"));
  stop(ext);
}

TEST_F(ProcessExtensionTest, TheChildIsContained) {
  // The host's own state that must not leak: an ignored signal, a blocked signal and a
  // descriptor opened without close-on-exec.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  const int leaked = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  // An ignored signal 33, which glibc's own sigaction() refuses to touch (the test runner
  // can hand it down that way), set with the raw system call.
  struct {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    unsigned long mask;
  } ignore{SIG_IGN, 0, nullptr, 0}, previous{};
  ::syscall(SYS_rt_sigaction, 33, &ignore, &previous, sizeof(unsigned long));
  runtime::ProcessSpec spec;
  spec.id = "fake";
  spec.command = EXTHOST_FAKE_EXTENSION;
  spec.args = {"contained"};
  spec.cwd = std::filesystem::temp_directory_path();
  auto spawned = run_bounded(io, ProcessExtension::spawn(io.get_executor(), spec));
  ::close(leaked);
  ::syscall(SYS_rt_sigaction, 33, &previous, nullptr, sizeof(unsigned long));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(spawned && spawned->ok());
  auto ext = std::move(*spawned).value();
  ASSERT_TRUE(run_bounded(io, ext->initialize(std::nullopt, boost::json::object())));
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":{}})")));
  ASSERT_TRUE(r && r->ok());
  const auto& o = r->value().as_object();
  EXPECT_EQ(wire::to_json(o.at("fds")), "[0,1,2]") << "every host descriptor is closed on exec";
  EXPECT_EQ(o.at("sig_ignored").as_string(), "0000000000000000") << "SIGPIPE's SIG_IGN must not survive exec";
  EXPECT_EQ(o.at("sig_blocked").as_string(), "0000000000000000");
  EXPECT_EQ(o.at("pgid").as_int64(), o.at("pid").as_int64()) << "its own process group";
  EXPECT_EQ(o.at("sid").as_int64(), o.at("pid").as_int64()) << "its own session";
  EXPECT_EQ(std::filesystem::path(std::string(o.at("cwd").as_string())),
            std::filesystem::canonical(std::filesystem::temp_directory_path()));
  stop(ext);
}

TEST_F(ProcessExtensionTest, AFiftyMebibyteStderrFloodKeepsHostMemoryBoundedAndTheTail) {
  auto ext = start({"stderr-flood", "50"});
  ASSERT_TRUE(ext);
  const long before = exthost::testing::rss_kib();
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":{}})")),
                       std::chrono::seconds(60));
  ASSERT_TRUE(r && r->ok());
  ASSERT_TRUE(run_until(io, [&] { return ext->stderr_tail().find("TAIL-MARKER") != std::string::npos; }));
  const long grown_kib = exthost::testing::rss_kib() - before;
  if (exthost::testing::k_memory_is_measurable) {
    EXPECT_LT(grown_kib, 16 * 1024) << "50 MiB of stderr must not be retained";
  }
  const auto snap = ext->child()->stderr_snapshot();
  EXPECT_GE(snap.total_bytes, 50u * 1024 * 1024);
  EXPECT_EQ(snap.forwarded_bytes, process::StderrLog::k_forward_budget);
  EXPECT_LE(snap.tail.size(), process::StderrLog::k_tail_bytes);
  stop(ext);
}

TEST_F(ProcessExtensionTest, AGrandchildDiesWithItsParent) {
  auto ext = start({"grandchild"});
  ASSERT_TRUE(ext);
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":{}})")));
  ASSERT_TRUE(r && r->ok());
  const pid_t grandchild = static_cast<pid_t>(r->value().as_object().at("pid").as_int64());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(exthost::testing::alive(grandchild));
  stop(ext);
  for (int i = 0; i < 500 && exthost::testing::alive(grandchild); ++i) ::usleep(10'000);
  EXPECT_FALSE(exthost::testing::alive(grandchild));
}

TEST_F(ProcessExtensionTest, TwoHundredSpawnShutdownCyclesLeakNoDescriptorsOrZombies) {
  {  // warm up lazily created descriptors (epoll, timerfd, the logger)
    auto ext = start({"echo"});
    ASSERT_TRUE(ext);
    stop(ext);
  }
  // A stopped extension's group lock is released once the janitor has removed its group.
  const int fds_before = exthost::testing::open_fd_count_without_group_locks();
  ASSERT_GE(fds_before, 0) << "a stopped extension's control group is still locked";
  const int zombies_before = exthost::testing::zombie_children();
  for (int i = 0; i < 200; ++i) {
    auto ext = start({"echo"});
    ASSERT_TRUE(ext) << "cycle " << i;
    stop(ext);
  }
  run_until(io, [] { return false; }, std::chrono::milliseconds(50));  // let reapers finish
  EXPECT_EQ(exthost::testing::open_fd_count_without_group_locks(), fds_before);
  EXPECT_EQ(exthost::testing::zombie_children(), zombies_before);
}

TEST_F(ProcessExtensionTest, AChildIgnoringSigtermIsStillStoppedWithinItsBound) {
  auto ext = start({"ignore-sigterm"});
  ASSERT_TRUE(ext);
  auto child = ext->child();
  const pid_t pid = child->pid();
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_bounded(io, ext->shutdown(), std::chrono::seconds(10)));
  EXPECT_TRUE(child->reaped());
  EXPECT_FALSE(exthost::testing::alive(pid));
  ASSERT_TRUE(child->wait_status());
  EXPECT_TRUE(WIFSIGNALED(*child->wait_status()));
  EXPECT_EQ(WTERMSIG(*child->wait_status()), SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST_F(ProcessExtensionTest, ASilentInitializeFailsAtItsDeadline) {
  runtime::Timeouts t;
  t.initialize = std::chrono::milliseconds(200);
  auto ext = spawn({"hang-init"}, t);
  ASSERT_TRUE(ext);
  auto init = run_bounded(io, ext->initialize(std::nullopt, boost::json::object()));
  ASSERT_TRUE(init);
  ASSERT_FALSE(init->ok());
  EXPECT_EQ(init->error().message, "Extension 'fake' initialize timed out after 200ms");
  EXPECT_EQ(init->error().kind, ErrorKind::timeout);
  stop(ext);
}

TEST_F(ProcessExtensionTest, AnUnsupportedProtocolVersionFailsInitialize) {
  auto ext = spawn({"bad-protocol"});
  ASSERT_TRUE(ext);
  auto init = run_bounded(io, ext->initialize(std::nullopt, boost::json::object()));
  ASSERT_TRUE(init);
  ASSERT_FALSE(init->ok());
  EXPECT_EQ(init->error().message,
            "Extension 'fake' initialize returned unsupported protocol_version 999 (supported: 1)");
  EXPECT_EQ(ext->lifecycle_snapshot()->health, Health::failed);
  stop(ext);
}

TEST_F(ProcessExtensionTest, AMissingBinaryFailsToSpawnWithTheOsError) {
  runtime::ProcessSpec spec;
  spec.id = "ghost";
  spec.command = "/definitely/not/spawned";
  auto r = run_bounded(io, ProcessExtension::spawn(io.get_executor(), spec));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->ok());
  EXPECT_EQ(r->error().message, "Failed to spawn extension 'ghost': No such file or directory (os error 2)");
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(ProcessExtensionTest, ATimedOutCallIsAbandonedAndTheNextCallWorks) {
  runtime::Timeouts t;
  t.tool_call = std::chrono::milliseconds(200);
  auto ext = start({"slow-call", "1000"}, t);
  ASSERT_TRUE(ext);
  auto slow = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")));
  ASSERT_TRUE(slow);
  ASSERT_FALSE(slow->ok());
  EXPECT_EQ(slow->error().kind, ErrorKind::timeout);
  EXPECT_EQ(slow->error().message, "Extension 'fake' method 'tool.call' timed out after 200ms");
  // The late reply arrives for an abandoned id: dropped and counted; the child lives on.
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().counters().late_replies.load() == 1; }));
  EXPECT_EQ(ext->restart_count(), 0u);
  EXPECT_EQ(ext->lifecycle_snapshot()->health, Health::running);
  stop(ext);
}

TEST_F(ProcessExtensionTest, ForceShutdownFailsThePendingCallAtOnceAndTheWorkerPathDoesNotRespawn) {
  auto ext = start({"slow-call", "60000"});
  ASSERT_TRUE(ext);
  auto pending = asio::co_spawn(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")),
                                asio::use_future);
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().pending_count() == 1; }));
  const pid_t first = ext->child()->pid();
  ext->force_shutdown();
  ASSERT_TRUE(run_until(io, [&] { return pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  auto r = pending.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "transport closed: extension cancelled");
  EXPECT_EQ(ext->lifecycle_snapshot(), (Lifecycle{3, Health::failed})) << "the cancelled generation is invalid";
  EXPECT_EQ(ext->restart_count(), 0u) << "a cancellation is not a crash";
  ASSERT_TRUE(run_until(io, [&] { return !exthost::testing::alive(first); }));
  // The worker path never respawns what was cancelled.
  auto later = run_bounded(io, ext->call_no_spawn("tool.call", boost::json::parse(R"({"name":"echo","input":1})")));
  ASSERT_TRUE(later);
  EXPECT_EQ(later->error().message, "Extension 'fake' process is not running; 'tool.call' refused (no respawn)");
  stop(ext);
}

TEST_F(ProcessExtensionTest, ACallAfterShutdownFailsWithoutRespawning) {
  auto ext = start({"echo"});
  ASSERT_TRUE(ext);
  stop(ext);
  auto r = run_bounded(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->ok());
  EXPECT_EQ(r->error().message, "Extension 'fake' was stopped (unloaded or reloaded); not respawning it");
  EXPECT_EQ(ext->child(), nullptr);
  EXPECT_EQ(ext->restart_count(), 0u);
}

TEST_F(ProcessExtensionTest, AShutdownDuringACallFailsTheCallWithTheShutdownText) {
  auto ext = start({"slow-call", "60000"});
  ASSERT_TRUE(ext);
  auto pending = asio::co_spawn(io, ext->call("tool.call", boost::json::parse(R"({"name":"echo","input":1})")),
                                asio::use_future);
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().pending_count() == 1; }));
  ASSERT_TRUE(run_bounded(io, ext->shutdown(), std::chrono::seconds(10)));
  ASSERT_TRUE(run_until(io, [&] { return pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }));
  auto r = pending.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "transport closed: extension shutdown");
  EXPECT_EQ(ext->restart_count(), 0u);
}

}  // namespace
}  // namespace exthost
