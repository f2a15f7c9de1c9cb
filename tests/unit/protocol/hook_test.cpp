#include "protocol/hook.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "wire/json.hpp"

namespace exthost::protocol {
namespace {

HookResult from(const char* text) { return hook_result_from_reply(boost::json::parse(text)); }

TEST(HookEvent, SerializesEveryFieldAndNullWhenAbsent) {
  HookEvent e;
  e.kind = HookKind::before_tool_call;
  e.tool_name = "bash";
  e.tool_input = boost::json::parse(R"({"command":"ls"})");
  EXPECT_EQ(wire::to_json(e.to_json()),
            R"({"kind":"before_tool_call","tool_name":"bash","tool_runtime_name":null,"tool_input":{"command":"ls"},)"
            R"("tool_output":null,"message":null,"session_id":null,"transcript":null,"data":null,"cwd":null})");
}

TEST(HookEvent, KindsUseTheirExactWireNames) {
  for (const char* name : {"before_tool_call", "after_tool_call", "before_message", "on_message_complete",
                           "on_compaction", "on_session_start", "on_session_end"}) {
    auto k = parse_hook_kind(name);
    ASSERT_TRUE(k) << name;
    EXPECT_EQ(to_string(*k), name);
  }
  EXPECT_FALSE(parse_hook_kind("BeforeToolCall"));
  EXPECT_FALSE(parse_hook_kind(""));
  EXPECT_FALSE(parse_hook_kind("on_crash"));
}

TEST(HookResult, DecodesEveryAction) {
  EXPECT_TRUE(std::holds_alternative<hook_result::Continue>(from(R"({"action":"continue"})")));
  EXPECT_EQ(std::get<hook_result::Block>(from(R"({"action":"block","reason":"rm -rf is not allowed"})")).reason,
            "rm -rf is not allowed");
  EXPECT_EQ(std::get<hook_result::Inject>(from(R"({"action":"inject","content":"date"})")).content, "date");
  EXPECT_EQ(std::get<hook_result::Confirm>(from(R"({"action":"confirm","message":"Run?"})")).message, "Run?");
  EXPECT_EQ(wire::to_json(std::get<hook_result::Modify>(from(R"({"action":"modify","input":{"command":"echo safe"}})")).input),
            R"({"command":"echo safe"})");
  EXPECT_EQ(std::get<hook_result::Replace>(from(R"({"action":"replace","output":"[clamped]"})")).output, "[clamped]");
  EXPECT_EQ(std::get<hook_result::ContextPhase>(from(R"({"action":"context_phase","phase":"new_task"})")).phase, "new_task");
  EXPECT_TRUE(std::holds_alternative<hook_result::Block>(from(R"({"action":"block","reason":"r","extra":1})")))
      << "unknown members are ignored";
}

TEST(HookResult, AMalformedModifyBlocksAndEverythingElseMalformedContinues) {
  const auto blocked = from(R"({"action":"modify"})");
  ASSERT_TRUE(std::holds_alternative<hook_result::Block>(blocked));
  EXPECT_EQ(std::get<hook_result::Block>(blocked).reason, "Extension returned malformed modify result");
  // A tool's input is an object: a string, null or an array in its place is no input.
  for (const char* reply : {R"({"action":"modify","input":"rm -rf /"})", R"({"action":"modify","input":null})",
                            R"({"action":"modify","input":[1]})"}) {
    const auto r = from(reply);
    ASSERT_TRUE(std::holds_alternative<hook_result::Block>(r)) << reply;
    EXPECT_EQ(std::get<hook_result::Block>(r).reason, "Extension returned malformed modify result");
  }
  for (const char* reply : {R"({"action":"block"})", R"({"action":"replace"})", R"({"action":"replace","output":5})",
                            R"({"action":"wat"})", R"({})", R"("continue")", "null", "[1]"}) {
    EXPECT_TRUE(std::holds_alternative<hook_result::Continue>(from(reply))) << reply;
    EXPECT_FALSE(decode_hook_result(boost::json::parse(reply))) << reply;
  }
}

TEST(HookResult, SerializesExactly) {
  EXPECT_EQ(wire::to_json(to_json(hook_result::Continue{})), R"({"action":"continue"})");
  EXPECT_EQ(wire::to_json(to_json(hook_result::Confirm{"Run this command?"})),
            R"({"action":"confirm","message":"Run this command?"})");
  EXPECT_EQ(wire::to_json(to_json(hook_result::Modify{boost::json::parse(R"({"command":"echo safe"})")})),
            R"({"action":"modify","input":{"command":"echo safe"}})");
  EXPECT_EQ(wire::to_json(to_json(hook_result::Replace{"[clamped:32] DEADBEEF"})),
            R"({"action":"replace","output":"[clamped:32] DEADBEEF"})");
}

}  // namespace
}  // namespace exthost::protocol
