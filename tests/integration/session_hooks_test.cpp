// Session and message hooks through real extensions (SPEC §8.21): injections per session,
// observe-only hooks, the two-key context phase, the session id and its kill switch.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>

#include "../support/plugin_dir.hpp"
#include "exthost/host.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using exthost::testing::read_text;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

class SessionHooksTest : public ::testing::Test {
 protected:
  exthost::HostOptions options() { return exthost::testing::isolated_options(root.path() / "home"); }
  fs::path plugins() const { return root.path() / "home" / "plugins"; }
  std::vector<json::object> recorded(const fs::path& file) {
    std::vector<json::object> out;
    std::istringstream lines(read_text(file));
    for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line).as_object());
    return out;
  }
  TempRoot root{"sessions"};
};

TEST_F(SessionHooksTest, SessionStartInjectionIsKeptPerSessionAndEndClearsOnlyThatSession) {
  write_fake_plugin(plugins(), "handoff", {"hook", R"({"action":"inject","content":"HANDOFF-SENTINEL"})"},
                    R"({"permissions":["session.lifecycle"],"hooks":[{"hook":"on_session_start"},{"hook":"on_session_end"}]})");
  exthost::Host host(options());
  ASSERT_EQ(host.discover().loaded.size(), 1u);
  EXPECT_EQ(host.session_start("sess-A"), std::optional<std::string>("HANDOFF-SENTINEL"));
  EXPECT_EQ(host.session_start("sess-B"), std::optional<std::string>("HANDOFF-SENTINEL"));
  EXPECT_EQ(host.session_injection("sess-A"), std::optional<std::string>("HANDOFF-SENTINEL"));
  EXPECT_EQ(host.session_end("sess-A", R"({"not":"an array"})").error().message,
            "on_session_end: the transcript must be a JSON array");
  EXPECT_EQ(host.session_injection("sess-A"), std::optional<std::string>("HANDOFF-SENTINEL"));
  auto ended = host.session_end("sess-A", R"([{"role":"user","content":"bye"}])");
  ASSERT_TRUE(ended);
  EXPECT_TRUE(*ended);
  EXPECT_EQ(host.session_injection("sess-A"), std::nullopt);
  EXPECT_EQ(host.session_injection("sess-B"), std::optional<std::string>("HANDOFF-SENTINEL"));
  EXPECT_EQ(host.session_injection("never-started"), std::nullopt);
}

TEST_F(SessionHooksTest, BeforeMessageInjectsAndObserveOnlyHooksCannotBlock) {
  const auto log = root.path() / "observed.jsonl";
  write_fake_plugin(plugins(), "clock", {"hook", R"({"action":"inject","content":"Current date and time: now"})"},
                    R"({"permissions":["privacy.llm_content"],"hooks":[{"hook":"before_message"}]})");
  write_fake_plugin(plugins(), "observer", {"hook", R"({"action":"block","reason":"not allowed here"})", log.string()},
                    R"({"permissions":["privacy.llm_content"],
                        "hooks":[{"hook":"on_compaction"},{"hook":"on_message_complete"}]})");
  exthost::Host host(options());
  ASSERT_EQ(host.discover().loaded.size(), 2u);
  EXPECT_EQ(*host.emit_hook(R"({"kind":"before_message","message":"hi","session_id":"s"})"),
            R"({"action":"inject","content":"Current date and time: now"})");
  EXPECT_EQ(*host.emit_hook(R"({"kind":"on_compaction","message":"summary text","session_id":"new",
                                "data":{"source":"manual","old_session_id":"old","new_session_id":"new","message_count":12}})"),
            R"({"action":"continue"})");
  EXPECT_EQ(*host.emit_hook(R"({"kind":"on_message_complete","message":"assistant text"})"), R"({"action":"continue"})");
  auto events = recorded(log);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].at("message"), "summary text");
  EXPECT_EQ(events[0].at("data").at("message_count"), 12);
  EXPECT_TRUE(events[0].at("transcript").is_null());
  EXPECT_EQ(events[1].at("kind"), "on_message_complete");
  EXPECT_EQ(events[1].at("message"), "assistant text");
}

TEST_F(SessionHooksTest, ContextPhaseCountsOnlyWithBothKeys) {
  write_fake_plugin(plugins(), "one-key", {"hook", R"({"action":"context_phase","phase":"new_task"})"},
                    R"({"permissions":["privacy.llm_content"],"hooks":[{"hook":"on_message_complete"}]})");
  {
    exthost::Host host(options());
    host.discover();
    EXPECT_EQ(*host.emit_hook(R"({"kind":"on_message_complete","message":"m"})"), R"({"action":"continue"})");
  }
  write_fake_plugin(plugins(), "one-key", {"hook", R"({"action":"context_phase","phase":"new_task"})"},
                    R"({"permissions":["privacy.llm_content","session.lifecycle"],"hooks":[{"hook":"on_message_complete"}]})");
  exthost::Host host(options());
  host.discover();
  EXPECT_EQ(*host.emit_hook(R"({"kind":"on_message_complete","message":"m"})"),
            R"({"action":"context_phase","phase":"new_task"})");
}

TEST_F(SessionHooksTest, ToolHooksCarryTheSessionIdUnlessTheKillSwitchIsOff) {
  const auto log = root.path() / "tool-hooks.jsonl";
  write_fake_plugin(plugins(), "spy", {"hook", R"({"action":"continue"})", log.string()},
                    R"({"permissions":["tools.intercept"],"hooks":[{"hook":"before_tool_call"}]})");
  write_fake_plugin(plugins(), "tools", {"echo"});
  {
    exthost::Host host(options());
    host.discover();
    ASSERT_TRUE(host.call_named_tool("tools:echo", "{}", {"sess-A", std::nullopt}));
    ASSERT_TRUE(host.call_named_tool("tools:echo", "{}", {"sess-B", std::nullopt}));
    ASSERT_TRUE(host.call_named_tool("tools:echo", "{}"));  // a worker: no conversation
  }
  ::setenv("EXTHOST_HOOK_SESSION_ID", "off", 1);
  {
    exthost::Host host(options());
    host.discover();
    ASSERT_TRUE(host.call_named_tool("tools:echo", "{}", {"sess-C", std::nullopt}));
  }
  ::unsetenv("EXTHOST_HOOK_SESSION_ID");
  auto events = recorded(log);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].at("session_id"), "sess-A");
  EXPECT_EQ(events[1].at("session_id"), "sess-B");
  EXPECT_TRUE(events[2].at("session_id").is_null());
  EXPECT_TRUE(events[3].at("session_id").is_null());
  EXPECT_TRUE(events[3].at("cwd").is_string());
}

}  // namespace
