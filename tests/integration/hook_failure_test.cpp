// What a real child's hook answers through ExtensionHandler::handle(): the answer, or an
// Error whose cause says why there is none (the hook bus decides what a failure means).
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <csignal>

#include "../support/bounded.hpp"
#include "../support/fake_extension.hpp"
#include "runtime/process_extension.hpp"

namespace exthost {
namespace {

namespace asio = boost::asio;
namespace hr = protocol::hook_result;
using exthost::testing::run_bounded;
using exthost::testing::run_until;
using exthost::testing::start_fake;

protocol::HookEvent before_bash() {
  protocol::HookEvent e;
  e.kind = protocol::HookKind::before_tool_call;
  e.tool_name = "bash";
  e.tool_input = boost::json::parse(R"({"command":"ls"})");
  return e;
}

class HookFailureTest : public ::testing::Test {
 protected:
  void SetUp() override { std::signal(SIGPIPE, SIG_IGN); }
  Result<protocol::HookResult> handle(runtime::ProcessExtension& ext, bool no_spawn = false) {
    auto r = no_spawn ? run_bounded(io, ext.handle_no_spawn(before_bash())) : run_bounded(io, ext.handle(before_bash()));
    if (!r) return Error::internal("(the hook call did not end)");
    return std::move(*r);
  }
  asio::io_context io;
};

TEST_F(HookFailureTest, AnAnswerIsTheValue) {
  auto ext = start_fake(io, {"hook", R"({"action":"block","reason":"no"})"});
  ASSERT_TRUE(ext);
  auto r = handle(*ext);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(std::holds_alternative<hr::Block>(r.value()));
  EXPECT_EQ(std::get<hr::Block>(r.value()).reason, "no");
  run_bounded(io, ext->shutdown());
}

TEST_F(HookFailureTest, AnErrorAnswerIsAnApplicationFailureWithTheExtensionsCode) {
  auto ext = start_fake(io, {"hook-error", "policy store unreachable"});
  ASSERT_TRUE(ext);
  auto r = handle(*ext);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().cause, ErrorCause::application);
  EXPECT_EQ(r.error().message, "Extension error: policy store unreachable");
  EXPECT_EQ(r.error().code, std::optional<std::int64_t>(-32000));
  EXPECT_EQ(r.error().extension_id, "fake");
  run_bounded(io, ext->shutdown());
}

TEST_F(HookFailureTest, NoAnswerWithinTheHookDeadlineIsATimeout) {
  runtime::Timeouts quick;
  quick.hook = std::chrono::milliseconds(200);
  auto ext = start_fake(io, {"hook-silent"}, quick);
  ASSERT_TRUE(ext);
  for (bool no_spawn : {false, true}) {
    auto r = handle(*ext, no_spawn);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().cause, ErrorCause::timeout) << r.error().message;
    EXPECT_EQ(r.error().kind, ErrorKind::timeout);
    EXPECT_EQ(r.error().message, "Extension 'fake' method 'hook.handle' timed out after 200ms");
    EXPECT_EQ(r.error().extension_id, "fake");
  }
  run_bounded(io, ext->shutdown());
}

TEST_F(HookFailureTest, AnInvalidResultIsAProtocolFailureButAMalformedModifyStillBlocks) {
  auto ext = start_fake(io, {"hook", R"({"action":"explode"})"});
  ASSERT_TRUE(ext);
  auto r = handle(*ext);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().cause, ErrorCause::protocol);
  EXPECT_EQ(r.error().message, "Extension 'fake' hook.handle returned an invalid result");
  EXPECT_EQ(r.error().extension_id, "fake");
  run_bounded(io, ext->shutdown());

  auto modify = start_fake(io, {"hook", R"({"action":"modify"})"});
  ASSERT_TRUE(modify);
  auto m = handle(*modify);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(std::holds_alternative<hr::Block>(m.value()));
  EXPECT_EQ(std::get<hr::Block>(m.value()).reason, "Extension returned malformed modify result");
  run_bounded(io, modify->shutdown());
}

TEST_F(HookFailureTest, ACrashedExtensionOnTheNoSpawnPathFailsAsGoneWithoutARestart) {
  auto ext = start_fake(io, {"replace"});
  ASSERT_TRUE(ext);
  ::kill(ext->child()->pid(), SIGKILL);
  ASSERT_TRUE(run_until(io, [&] { return ext->inbox().closed(); }));
  for (int i = 0; i < 2; ++i) {
    auto r = handle(*ext, true);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.error().cause == ErrorCause::transport || r.error().cause == ErrorCause::not_running)
        << cause_name(r.error().cause) << ": " << r.error().message;
    EXPECT_EQ(r.error().extension_id, "fake");
  }
  EXPECT_EQ(ext->restart_count(), 0u);
  run_bounded(io, ext->shutdown());
}

TEST_F(HookFailureTest, AStoppedExtensionIsStoppedOnEitherPath) {
  auto ext = start_fake(io, {"replace"});
  ASSERT_TRUE(ext);
  ASSERT_TRUE(run_bounded(io, ext->shutdown()));
  for (bool no_spawn : {false, true}) {
    auto r = handle(*ext, no_spawn);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().cause, ErrorCause::stopped) << r.error().message;
    EXPECT_EQ(r.error().extension_id, "fake");
  }
}

TEST_F(HookFailureTest, AnExtensionPastItsRestartBudgetIsRestartExhausted) {
  runtime::RestartPolicy quick;
  quick.base_delay = std::chrono::milliseconds(10);
  auto ext = start_fake(io, {"always-exit"}, {}, quick);
  ASSERT_TRUE(ext);
  for (int i = 0; i < 4 && ext->health() != Health::failed; ++i) {
    auto r = handle(*ext);
    EXPECT_FALSE(r.ok()) << "an extension that exits on every request never answers";
  }
  ASSERT_EQ(ext->health(), Health::failed);
  auto r = handle(*ext);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().cause, ErrorCause::restart_exhausted) << r.error().message;
  EXPECT_EQ(r.error().message, "Extension 'fake' exceeded restart limit (3)");
  EXPECT_EQ(r.error().extension_id, "fake");
  run_bounded(io, ext->shutdown());
}

}  // namespace
}  // namespace exthost
