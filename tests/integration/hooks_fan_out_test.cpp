// Hooks through the Host with real extensions: every subscriber is asked at once and the
// answers are folded in load order (plugin-name order at discovery); a subscription with
// `"on_error": "block"` (or a host that fails every hook closed) blocks a tool call when its
// hook does not answer, answers an error or its extension is down, naming the extension.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <future>

#include "../support/plugin_dir.hpp"
#include "exthost/host.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using exthost::testing::read_text;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

// The fixture's modes register its generic tools, except mode "hook".
constexpr const char* k_intercept =
    R"({"permissions":["tools.register","tools.intercept"],"hooks":[{"hook":"before_tool_call"}]})";

// A subscription to before_tool_call for the tool "tools:echo" only, with `on_error`.
std::string guard_of_echo(const char* on_error) {
  return std::string(R"({"permissions":["tools.register","tools.intercept"],)"
                     R"("hooks":[{"hook":"before_tool_call","tool":"tools:echo")") +
         (on_error ? std::string(R"(,"on_error":")") + on_error + "\"" : std::string()) + "}]}";
}

class HooksFanOutTest : public ::testing::Test {
 protected:
  exthost::HostOptions options() { return exthost::testing::isolated_options(root.path() / "home"); }
  fs::path plugins() const { return root.path() / "home" / "plugins"; }
  fs::path file(const std::string& name) const { return root.path() / name; }
  // Waits (bounded) until every file in `files` holds a line.
  static bool each_has_a_line(const std::vector<fs::path>& files, std::chrono::seconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    for (;;) {
      bool all = true;
      for (const auto& f : files) all = all && read_text(f).find('\n') != std::string::npos;
      if (all) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  TempRoot root{"hooks-fan-out"};
};

TEST_F(HooksFanOutTest, EverySubscriberHearsTheEventBeforeAnyHasAnswered) {
  std::vector<fs::path> logs;
  for (const char* name : {"a-silent", "b-silent", "c-silent"}) {
    logs.push_back(file(std::string(name) + ".log"));
    write_fake_plugin(plugins(), name, {"hook-silent-log", logs.back().string()}, k_intercept);
  }
  logs.push_back(file("d-guard.log"));
  write_fake_plugin(plugins(), "d-guard", {"hook", R"({"action":"continue"})", logs.back().string()}, k_intercept);
  auto opts = options();
  opts.hook_timeout = std::chrono::seconds(60);  // no silent hook's deadline passes during the test
  exthost::Host host(opts);
  ASSERT_EQ(host.discover().loaded.size(), 4u);

  std::promise<exthost::Result<std::string>> verdict;
  auto answered = verdict.get_future();
  host.emit_hook(R"({"kind":"before_tool_call","tool_name":"bash","tool_input":{"command":"ls"}})",
                 [&verdict](exthost::Result<std::string> r) { verdict.set_value(std::move(r)); });
  // Asked in turn, b-silent would hear nothing until a-silent's 60 s deadline.
  EXPECT_TRUE(each_has_a_line(logs, std::chrono::seconds(20)));
  EXPECT_EQ(answered.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the fold waits for the silent subscribers first in load order";
  for (const auto& log : logs) EXPECT_NE(read_text(log).find(R"("tool_name":"bash")"), std::string::npos) << log;
  host.shutdown_all();  // the silent hooks' calls fail: the verdict comes
  ASSERT_EQ(answered.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(answered.get());
}

TEST_F(HooksFanOutTest, AnEarlierModifyWinsOverALaterBlockAndTheBlockedCallNamesItsExtension) {
  write_fake_plugin(plugins(), "a-rewrite", {"hook", R"({"action":"modify","input":{"text":"modified"}})"},
                    guard_of_echo(nullptr));
  write_fake_plugin(plugins(), "b-block", {"hook", R"({"action":"block","reason":"no"})"}, guard_of_echo(nullptr));
  write_fake_plugin(plugins(), "tools", {"echo"});
  {
    exthost::Host host(options());
    ASSERT_EQ(host.discover().loaded.size(), 3u);
    auto r = host.call_named_tool("tools:echo", R"({"text":"original"})");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, R"({"content":{"text":"modified"}})");
  }
  // The other way round the block comes first in load order.
  fs::rename(plugins() / "a-rewrite", plugins() / "c-rewrite");
  exthost::Host host(options());
  ASSERT_EQ(host.discover().loaded.size(), 3u);
  auto r = host.call_named_tool("tools:echo", R"({"text":"original"})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Tool 'tools:echo' blocked by hook: no (extension 'b-block')");
  EXPECT_EQ(r.error().cause, exthost::ErrorCause::blocked);
  EXPECT_EQ(r.error().extension_id, "b-block");
  EXPECT_EQ(r.error().kind, exthost::ErrorKind::extension);
}

TEST_F(HooksFanOutTest, InjectionsAreJoinedInLoadOrder) {
  const char* llm = R"({"permissions":["privacy.llm_content"],"hooks":[{"hook":"before_message"}]})";
  write_fake_plugin(plugins(), "c-three", {"hook", R"({"action":"inject","content":"three"})"}, llm);
  write_fake_plugin(plugins(), "a-one", {"hook", R"({"action":"inject","content":"one"})"}, llm);
  write_fake_plugin(plugins(), "b-two", {"hook", R"({"action":"inject","content":"two"})"}, llm);
  exthost::Host host(options());
  ASSERT_EQ(host.discover().loaded.size(), 3u);
  auto r = host.emit_hook(R"({"kind":"before_message","message":"hi"})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, R"({"action":"inject","content":"one\n\ntwo\n\nthree"})");
}

TEST_F(HooksFanOutTest, ASilentSubscriberHoldsTheVerdictOnlyUntilTheHookDeadline) {
  write_fake_plugin(plugins(), "a-silent", {"hook-silent"}, guard_of_echo(nullptr));
  write_fake_plugin(plugins(), "b-guard", {"hook", R"({"action":"block","reason":"no"})"}, guard_of_echo(nullptr));
  write_fake_plugin(plugins(), "tools", {"echo"});
  auto opts = options();
  opts.hook_timeout = std::chrono::milliseconds(500);
  exthost::Host host(opts);
  ASSERT_EQ(host.discover().loaded.size(), 3u);
  auto r = host.call_named_tool("tools:echo", "{}");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Tool 'tools:echo' blocked by hook: no (extension 'b-guard')");
  EXPECT_EQ(r.error().extension_id, "b-guard");
}

// --- failing closed ----------------------------------------------------------------------

TEST_F(HooksFanOutTest, AGuardThatDoesNotAnswerInTimeBlocksTheCall) {
  write_fake_plugin(plugins(), "guard", {"hook-silent"}, guard_of_echo("block"));
  write_fake_plugin(plugins(), "tools", {"echo"});
  auto opts = options();
  opts.hook_timeout = std::chrono::seconds(1);
  exthost::Host host(opts);
  ASSERT_EQ(host.discover().loaded.size(), 2u);
  auto r = host.call_named_tool("tools:echo", R"({"text":"hi"})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "Tool 'tools:echo' blocked by hook: blocked: hook of extension 'guard' did not answer within 1 s "
            "(fail-closed)");
  EXPECT_EQ(r.error().cause, exthost::ErrorCause::blocked);
  EXPECT_EQ(r.error().extension_id, "guard");
  // The tool never ran: its extension received no tool.call but this one (the guard only
  // watches tools:echo).
  EXPECT_EQ(*host.call_named_tool("tools:methods", "{}"), R"(["initialize","info.get","tool.call"])");
}

TEST_F(HooksFanOutTest, AGuardThatAnswersAnErrorBlocksTheCallButAContinueSubscriptionFailsOpen) {
  write_fake_plugin(plugins(), "guard", {"hook-error", "policy store unreachable"}, guard_of_echo("block"));
  write_fake_plugin(plugins(), "tools", {"echo"});
  {
    exthost::Host host(options());
    ASSERT_EQ(host.discover().loaded.size(), 2u);
    auto r = host.call_named_tool("tools:echo", R"({"text":"hi"})");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message,
              "Tool 'tools:echo' blocked by hook: blocked: hook of extension 'guard' answered an error: policy store "
              "unreachable (fail-closed)");
    EXPECT_EQ(r.error().extension_id, "guard");
    auto verdict = host.emit_hook(R"({"kind":"before_tool_call","tool_name":"tools_echo","tool_runtime_name":"tools:echo"})");
    ASSERT_TRUE(verdict);
    EXPECT_EQ(*verdict, R"x({"action":"block","reason":"blocked: hook of extension 'guard' answered an error: policy )x"
                        R"x(store unreachable (fail-closed)"})x");
  }
  fs::remove_all(plugins() / "guard");
  write_fake_plugin(plugins(), "guard", {"hook-error", "policy store unreachable"}, guard_of_echo("continue"));
  exthost::Host host(options());
  ASSERT_EQ(host.discover().loaded.size(), 2u);
  auto r = host.call_named_tool("tools:echo", R"({"text":"hi"})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, R"({"content":{"text":"hi"}})");
}

TEST_F(HooksFanOutTest, AGuardWhoseExtensionIsDownBlocksTheCall) {
  write_fake_plugin(plugins(), "guard", {"always-exit"}, guard_of_echo("block"));
  write_fake_plugin(plugins(), "tools", {"echo"});
  auto opts = options();
  opts.hook_timeout = std::chrono::seconds(20);  // the restarts' backoff stays well inside it
  exthost::Host host(opts);
  ASSERT_EQ(host.discover().loaded.size(), 2u);
  const std::string prefix = "Tool 'tools:echo' blocked by hook: blocked: hook of extension 'guard' ";
  // Each call costs the guard a restart or two; once the budget is spent it is down for good.
  for (int i = 0; i < 8 && host.health("guard") != exthost::Health::failed; ++i) {
    auto r = host.call_named_tool("tools:echo", "{}");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message.rfind(prefix, 0), 0u) << r.error().message;
    EXPECT_EQ(r.error().extension_id, "guard");
    EXPECT_EQ(r.error().cause, exthost::ErrorCause::blocked);
  }
  ASSERT_EQ(host.health("guard"), exthost::Health::failed);
  auto r = host.call_named_tool("tools:echo", "{}");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, prefix + "is not running (fail-closed)");
  EXPECT_EQ(*host.call_named_tool("tools:methods", "{}"), R"(["initialize","info.get","tool.call"])");
}

TEST_F(HooksFanOutTest, AHostThatFailsHooksClosedBlocksForEverySubscription) {
  write_fake_plugin(plugins(), "guard", {"hook-error", "nope"}, guard_of_echo(nullptr));
  write_fake_plugin(plugins(), "tools", {"echo"});
  {
    exthost::Host host(options());
    ASSERT_EQ(host.discover().loaded.size(), 2u);
    EXPECT_TRUE(host.call_named_tool("tools:echo", "{}")) << "by default a hook fails open";
  }
  auto opts = options();
  opts.hooks_fail_closed = true;
  exthost::Host host(opts);
  ASSERT_EQ(host.discover().loaded.size(), 2u);
  auto r = host.call_named_tool("tools:echo", "{}");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "Tool 'tools:echo' blocked by hook: blocked: hook of extension 'guard' answered an error: nope (fail-closed)");
}

TEST_F(HooksFanOutTest, ABadOnErrorValueFailsTheLoadBeforeAnySpawn) {
  const auto spawned = file("spawned.json");
  const auto dir = write_fake_plugin(root.path(), "guard", {"config-seen", spawned.string()},
                                     R"({"permissions":["tools.intercept"],
                                         "hooks":[{"hook":"before_tool_call","on_error":"fail"}]})");
  exthost::Host host(options());
  auto r = host.load(dir);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, exthost::ErrorKind::manifest);
  EXPECT_EQ(r.error().message,
            "Failed to parse extension manifest: unknown variant `fail` for `on_error`, expected `continue` or `block`");
  EXPECT_FALSE(fs::exists(spawned)) << "nothing was spawned";
}

}  // namespace
