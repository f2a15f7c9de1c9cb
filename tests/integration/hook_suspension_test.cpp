// A child whose hook never answers, through the hook bus: suspended after the named count of
// timeouts, then left alone until a probe is due. The child's own record of the requests it
// received (tool "methods") shows which events reached it.
#include <gtest/gtest.h>

#include <boost/json/object.hpp>
#include <csignal>

#include "../support/bounded.hpp"
#include "../support/fake_extension.hpp"
#include "host/hook_bus.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace {

using exthost::testing::run_bounded;
namespace hr = protocol::hook_result;

class HookSuspensionThroughAChild : public ::testing::Test {
 protected:
  void SetUp() override { std::signal(SIGPIPE, SIG_IGN); }

  protocol::HookResult emit() {
    protocol::HookEvent e;
    e.kind = protocol::HookKind::before_tool_call;
    e.tool_name = "bash";
    e.tool_input = boost::json::object{{"command", "ls"}};
    return run_bounded(io, bus.emit(std::move(e)))->result;
  }
  // The methods of every request the child has received, in order.
  std::string received(runtime::ProcessExtension& ext) {
    auto r = run_bounded(io, ext.call("tool.call", boost::json::object{{"name", "methods"}, {"input", boost::json::object()}}));
    if (!r || !r->ok()) return "(methods failed)";
    return wire::to_json(r->value());
  }

  boost::asio::io_context io;
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  // The bus deadline equals the child's hook deadline, as in a host with default options.
  static constexpr std::chrono::milliseconds k_deadline{200};
  host::HookBus bus{k_deadline, [this] { return now; }};
};

TEST_F(HookSuspensionThroughAChild, TheFourthEventDoesNotReachAHookThatNeverAnswers) {
  runtime::Timeouts timeouts;
  timeouts.hook = k_deadline;
  auto ext = exthost::testing::start_fake(io, {"hook-silent"}, timeouts);
  ASSERT_TRUE(ext);
  host::HookSubscription sub;
  sub.kind = protocol::HookKind::before_tool_call;
  host::PermissionSet intercept;
  intercept.add(host::Permission::tools_intercept);
  ASSERT_TRUE(bus.subscribe(ext, sub, intercept));

  for (std::size_t i = 0; i < host::k_hook_suspend_after_timeouts; ++i) {
    EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit()));
  }
  EXPECT_TRUE(bus.has_suspended("fake"));
  EXPECT_TRUE(std::holds_alternative<hr::Continue>(emit()));
  EXPECT_EQ(received(*ext), R"(["initialize","hook.handle","hook.handle","hook.handle","tool.call"])");

  // After the interval one event probes the child; it stays silent, so the hook is suspended
  // again and the next event passes it by.
  now += host::k_hook_suspend_interval;
  emit();
  emit();
  EXPECT_EQ(received(*ext),
            R"(["initialize","hook.handle","hook.handle","hook.handle","tool.call","hook.handle","tool.call"])");
  EXPECT_TRUE(bus.has_suspended("fake"));
  ASSERT_EQ(bus.suspended_for("fake").size(), 1u);
  EXPECT_EQ(bus.suspended_for("fake")[0].consecutive_timeouts, 4u);
  run_bounded(io, ext->shutdown());
}

}  // namespace
}  // namespace exthost
