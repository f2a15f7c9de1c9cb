// Hostile extensions (issue 7's suite, first part): each attack runs against a real child
// while a second, healthy extension keeps answering; each is bounded in time (every call
// has a deadline, the test a bound) and, where the build can measure it, in host memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "../support/plugin_dir.hpp"
#include "../support/proc.hpp"
#include "exthost/host.hpp"
#include "rpc/connection.hpp"

namespace {

namespace fs = std::filesystem;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

// The stderr flood: a gibibyte; an eighth of it under ThreadSanitizer, which slows the
// host's reading about tenfold (that run looks for races, not for throughput).
#if defined(__SANITIZE_THREAD__)
constexpr const char* k_stderr_flood_mib = "128";
#else
constexpr const char* k_stderr_flood_mib = "1024";
#endif

// Host memory an attack may cost at most: several attacks send tens of MiB.
constexpr long k_max_rss_growth_kib = 16 * 1024;

class HostileTest : public ::testing::Test {
 protected:
  exthost::HostOptions options() {
    auto o = exthost::testing::isolated_options(root.path() / "home");
    o.tool_call_timeout = std::chrono::seconds(3);
    o.initialize_timeout = std::chrono::seconds(3);
    return o;
  }

  struct Outcome {
    exthost::Result<std::string> attack;
    int healthy_calls = 0;
    bool healthy_all_ok = true;
  };

  // Loads a healthy extension and a hostile one (the fake extension with `hostile_args`),
  // calls the hostile one's `tool` on a thread of its own and the healthy extension until
  // that call has ended.
  Outcome run_attack(exthost::Host& host, const std::vector<std::string>& hostile_args, const std::string& tool) {
    const std::string behaviour = hostile_args.back();
    EXPECT_TRUE(host.load(write_fake_plugin(root.path(), "healthy", {"echo"})));
    auto hostile = host.load(write_fake_plugin(root.path(), "hostile", hostile_args));
    EXPECT_TRUE(hostile) << (hostile ? "" : hostile.error().message);
    const long rss_before = exthost::testing::rss_kib();
    auto attack = std::async(std::launch::async, [&] { return host.call_tool("hostile", tool, "{}"); });
    Outcome out;
    const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    do {
      auto r = host.call_tool("healthy", "echo", R"({"still":"here"})");
      ++out.healthy_calls;
      out.healthy_all_ok = out.healthy_all_ok && r && *r == R"({"content":{"still":"here"}})";
    } while (attack.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready &&
             std::chrono::steady_clock::now() < bound);
    EXPECT_EQ(attack.wait_for(std::chrono::seconds(0)), std::future_status::ready) << behaviour << " did not end within 60 s";
    out.attack = attack.get();
    if (exthost::testing::k_memory_is_measurable) {
      EXPECT_LT(exthost::testing::rss_kib() - rss_before, k_max_rss_growth_kib) << behaviour;
    }
    EXPECT_TRUE(out.healthy_all_ok) << behaviour;
    EXPECT_GE(out.healthy_calls, 1);
    return out;
  }
  Outcome run_attack(exthost::Host& host, const std::string& behaviour) {
    return run_attack(host, {"hostile", behaviour}, "attack");
  }

  static void expect_error(const exthost::Result<std::string>& r, const std::string& part) {
    ASSERT_FALSE(r) << "expected an error containing '" << part << "', got " << *r;
    EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
  }

  TempRoot root{"hostile"};
};

TEST_F(HostileTest, ANewlineLessStdoutFloodEndsAtTheHeaderLineCap) {
  exthost::Host host(options());
  expect_error(run_attack(host, "garbage").attack, "header line too long (1025 bytes)");
}

TEST_F(HostileTest, AHeaderBombEndsAtTheHeaderBlockCap) {
  exthost::Host host(options());
  expect_error(run_attack(host, "header-bomb").attack, "frame headers too long (more than 65536 bytes)");
}

TEST_F(HostileTest, AHugeContentLengthIsRefusedBeforeAllocating) {
  exthost::Host host(options());
  expect_error(run_attack(host, "length-huge").attack, "frame too large: 99999999999 bytes (max 4194304)");
}

TEST_F(HostileTest, NegativeAndNonNumericContentLengthsAreRefused) {
  exthost::Host host(options());
  expect_error(run_attack(host, "length-negative").attack, "Invalid Content-Length value: \"-5\"");
  ASSERT_TRUE(host.unload("hostile"));
  ASSERT_TRUE(host.unload("healthy"));
  expect_error(run_attack(host, "length-text").attack, "Invalid Content-Length value: \"twelve\"");
}

TEST_F(HostileTest, ADuplicatedContentLengthTakesTheLaterValue) {
  exthost::Host host(options());
  auto out = run_attack(host, "length-duplicate");
  ASSERT_TRUE(out.attack) << out.attack.error().message;
  EXPECT_EQ(*out.attack, R"("survived")");
}

TEST_F(HostileTest, AFrameDribbledAtOneBytePerTenMillisecondsStillArrivesWhole) {
  exthost::Host host(options());
  auto out = run_attack(host, "dribble");
  ASSERT_TRUE(out.attack) << out.attack.error().message;
  EXPECT_EQ(*out.attack, R"("survived")");
  EXPECT_GT(out.healthy_calls, 1) << "the healthy extension answered while the frame trickled in";
}

TEST_F(HostileTest, AMillionLevelsOfNestingAreAnErrorNotAStackOverflow) {
  exthost::Host host(options());
  expect_error(run_attack(host, "deep").attack, "too deep");
}

TEST_F(HostileTest, InvalidUtf8InAStringIsAnError) {
  exthost::Host host(options());
  expect_error(run_attack(host, "bad-utf8").attack, "Parse frame error");
}

TEST_F(HostileTest, ANumberBeyondTheDoubleRangeIsInvalidJsonNotInfinity) {
  exthost::Host host(options());
  const auto out = run_attack(host, "huge-number");
  expect_error(out.attack, "Parse frame error: number out of range at byte ");
  expect_error(out.attack, ": 1e999");
  // Handled like any other invalid frame: the extension is restarted and answers again.
  auto healthy = host.call_tool("hostile", "echo", "[1]");
  ASSERT_TRUE(healthy) << healthy.error().message;
  EXPECT_EQ(*healthy, R"({"content":[1]})");
}

TEST_F(HostileTest, RepliesToUnknownIdsDuplicatesAndIdTypeConfusionAreDroppedAndCounted) {
  exthost::Host host(options());
  auto out = run_attack(host, "confused-ids");
  ASSERT_TRUE(out.attack) << out.attack.error().message;
  EXPECT_EQ(*out.attack, R"("survived")");
  auto healthy = host.call_tool("hostile", "echo", "[1]");  // the transport is intact
  ASSERT_TRUE(healthy) << healthy.error().message;
  EXPECT_EQ(*healthy, R"({"content":[1]})");
  const auto stats = *host.stats("hostile");
  EXPECT_GE(stats.late_replies, 2u) << "the unknown id and the duplicate";
  EXPECT_GE(stats.discarded_frames, 1u) << "the reply whose id is a string: host ids are numbers";
}

TEST_F(HostileTest, StrayBytesBeforeAValidFrameAreSkipped) {
  exthost::Host host(options());
  auto out = run_attack(host, "stray");
  ASSERT_TRUE(out.attack) << out.attack.error().message;
  EXPECT_EQ(*out.attack, R"("survived")");
}

TEST_F(HostileTest, AGibibyteOfStderrIsDrainedWithinItsBoundAndKeepsItsTail) {
  auto o = options();
  o.tool_call_timeout = std::chrono::seconds(60);  // the flood's own call lasts as long as the flood
  exthost::Host host(o);
  auto out = run_attack(host, {"stderr-flood", k_stderr_flood_mib}, "echo");
  ASSERT_TRUE(out.attack) << out.attack.error().message;
  EXPECT_NE(host.stderr_tail("hostile").find("TAIL-MARKER"), std::string::npos);
}

TEST_F(HostileTest, AnExtensionThatStopsReadingBlocksOnlyItsOwnCalls) {
  exthost::Host host(options());
  auto out = run_attack(host, "no-read");  // the attack itself never answers
  expect_error(out.attack, "timed out");
  // A 4 MiB request to the child that reads nothing: the host queues it (one frame passes
  // an empty write queue whatever its size) until the call's deadline; nothing was read
  // meanwhile, so the transport ends there and the queue is released. The next calls
  // restart the extension and are answered, and the healthy one never stops answering.
  const std::string big = R"({"pad":")" + std::string(4 * 1024 * 1024 - 64, 'p') + R"("})";
  const long rss_before = exthost::testing::rss_kib();
  expect_error(host.call_tool("hostile", "echo", big), "timed out");
  for (int i = 0; i < 8; ++i) {
    auto r = host.call_tool("hostile", "echo", "[1]");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, R"({"content":[1]})");
    ASSERT_TRUE(host.call_tool("healthy", "echo", "{}"));
  }
  if (exthost::testing::k_memory_is_measurable) {
    // The call held its input as text, as a JSON value and as a frame; the write queue held
    // at most that frame or its budget.
    constexpr long k_big_kib = 4 * 1024;
    constexpr long k_queue_kib = static_cast<long>(exthost::rpc::k_write_queue_budget / 1024);
    EXPECT_LT(exthost::testing::rss_kib() - rss_before, 3 * k_big_kib + std::max(k_big_kib, k_queue_kib) + k_max_rss_growth_kib);
  }
  ASSERT_TRUE(host.unload("hostile"));
}

TEST_F(HostileTest, ClosingStdoutWhileStayingAliveIsAnEofAndTheProcessIsStopped) {
  exthost::Host host(options());
  EXPECT_TRUE(host.load(write_fake_plugin(root.path(), "healthy", {"echo"})));
  ASSERT_TRUE(host.load(write_fake_plugin(root.path(), "hostile", {"hostile", "close-stdout"})));
  const auto pid = host.child_pid("hostile");
  ASSERT_TRUE(pid);
  expect_error(host.call_tool("hostile", "attack", "{}"), "EOF");
  EXPECT_FALSE(exthost::testing::alive(*pid)) << "the host stopped the process that closed its stdout";
  EXPECT_TRUE(host.call_tool("healthy", "echo", "{}"));
}

TEST_F(HostileTest, TaskStormsAndNotificationFloodsWithoutSubscribersAreDroppedAndCounted) {
  exthost::Host host(options());
  auto storm = run_attack(host, "task-storm");
  ASSERT_TRUE(storm.attack) << storm.attack.error().message;
  EXPECT_GE(host.stats("hostile")->notifications_dropped, 20000u);
  ASSERT_TRUE(host.unload("hostile"));
  ASSERT_TRUE(host.unload("healthy"));
  auto flood = run_attack(host, "notify-flood");
  ASSERT_TRUE(flood.attack) << flood.attack.error().message;
  EXPECT_GE(host.stats("hostile")->notifications_dropped, 20000u);
}

TEST_F(HostileTest, ExitingDuringInitializeFailsTheLoadWithTheStderrTail) {
  exthost::Host host(options());
  auto r = host.load(write_fake_plugin(root.path(), "quitter", {"exit-in-init"}));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exit-in-init: leaving before the handshake"), std::string::npos) << r.error().message;
  EXPECT_TRUE(host.list().empty());
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(HostileTest, ExecOfAMissingBinaryFailsTheLoadCleanly) {
  exthost::Host host(options());
  auto r = host.load(write_fake_plugin(root.path(), "missing", {}, R"({"permissions":["tools.register"]})",
                                       "/definitely/not/here"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Failed to spawn extension 'missing': No such file or directory (os error 2)");
}

TEST_F(HostileTest, ALeaderThatExitsWhileItsGrandchildHoldsStdoutEndsTheTransport) {
  // The grandchild forked at initialize keeps the stdout pipe open: no EOF ever comes, yet
  // the call must fail as at EOF, not wait for its deadline.
  exthost::Host host(options());
  EXPECT_TRUE(host.load(write_fake_plugin(root.path(), "healthy", {"echo"})));
  ASSERT_TRUE(host.load(write_fake_plugin(root.path(), "hostile", {"grandchild"})));
  auto grandchild = host.call_tool("hostile", "echo", "{}");
  ASSERT_TRUE(grandchild) << grandchild.error().message;
  auto r = host.call_tool("hostile", "exit-now", "{}");
  expect_error(r, "transport closed: EOF");
  EXPECT_EQ(r.error().message.find("timed out"), std::string::npos) << r.error().message;
  EXPECT_TRUE(host.call_tool("healthy", "echo", "{}"));
  ASSERT_TRUE(host.unload("hostile"));
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(HostileTest, IgnoringSigtermEndsWithSigkillAtTheEndOfTheLadder) {
  auto o = options();
  o.shutdown_request_timeout = std::chrono::milliseconds(200);
  o.shutdown_grace = std::chrono::milliseconds(300);
  exthost::Host host(o);
  EXPECT_TRUE(host.load(write_fake_plugin(root.path(), "healthy", {"echo"})));
  ASSERT_TRUE(host.load(write_fake_plugin(root.path(), "hostile", {"ignore-sigterm"})));
  const auto pid = host.child_pid("hostile");
  ASSERT_TRUE(pid);
  auto unloaded = std::async(std::launch::async, [&] { return host.unload("hostile"); });
  int healthy_calls = 0;
  while (unloaded.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready && healthy_calls < 100000) {
    auto r = host.call_tool("healthy", "echo", R"({"still":"here"})");
    ASSERT_TRUE(r && *r == R"({"content":{"still":"here"}})");
    ++healthy_calls;
  }
  ASSERT_EQ(unloaded.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(unloaded.get());
  EXPECT_GE(healthy_calls, 1) << "the healthy extension answered while the ladder ran";
  EXPECT_FALSE(exthost::testing::alive(*pid)) << "SIGKILL ended what SIGTERM did not";
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(HostileTest, AFloodOfInboundRequestsIsBoundedAndWedgesOnlyItself) {
  // 5,000 memory.query requests written before reading any reply. The host serves at most
  // 16 at once; their replies fill the extension's stdin, which it does not read, so the
  // host stops reading its requests: both sides wait, and only the flooding call ends, at
  // its deadline. Nothing grows without bound, and the healthy extension keeps answering.
  exthost::Host host(options());
  auto out = run_attack(host, {"inbound-flood", "5000"}, "echo");
  if (out.attack) {
    EXPECT_EQ(*out.attack, R"({"replies":5000,"every_id_once":true})");
  } else {
    EXPECT_NE(out.attack.error().message.find("timed out"), std::string::npos) << out.attack.error().message;
  }
  const auto stats = host.stats("hostile");
  ASSERT_TRUE(stats);
  EXPECT_GE(stats->inbound_requests, 16u);
  EXPECT_LE(stats->inbound_requests, 5000u);
  EXPECT_LE(stats->inbound_in_flight_peak, 16u);
  ASSERT_TRUE(host.unload("hostile"));
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(HostileTest, AForkedAndADaemonizedGrandchildEndWithTheirExtension) {
  exthost::Host host(options());
  EXPECT_TRUE(host.load(write_fake_plugin(root.path(), "healthy", {"echo"})));
  auto info = host.load(write_fake_plugin(root.path(), "hostile", {"limits"}));
  ASSERT_TRUE(info) << info.error().message;
  auto daemon_reply = host.call_tool("hostile", "daemonize", "{}");
  ASSERT_TRUE(daemon_reply) << daemon_reply.error().message;
  const auto daemon = static_cast<pid_t>(std::stol(daemon_reply->substr(daemon_reply->find(':') + 1)));
  ASSERT_GT(daemon, 0);
  EXPECT_TRUE(exthost::testing::alive(daemon));
  EXPECT_TRUE(host.call_tool("healthy", "echo", "{}"));
  ASSERT_TRUE(host.unload("hostile"));
  EXPECT_TRUE(host.call_tool("healthy", "echo", "{}"));
  if (!info->contained_by_cgroup) GTEST_SKIP() << "no writable control group: a daemon is not contained here";
  for (int i = 0; i < 500 && exthost::testing::alive(daemon); ++i) ::usleep(10'000);
  EXPECT_FALSE(exthost::testing::alive(daemon)) << "daemon " << daemon << " outlived its extension";
}

}  // namespace
