// Ported from the reference's tool_call_params_tests.
#include "protocol/tool_call.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "wire/json.hpp"

namespace exthost::protocol {
namespace {

const boost::json::object& obj(const boost::json::value& v) { return v.as_object(); }

TEST(ToolCallParams, CarriesCallerSessionIdAndCwd) {
  auto p = tool_call_params("echo", boost::json::parse(R"({"text":"hi"})"), std::string("sess-A"),
                            std::filesystem::path("/home/me/chat"), std::nullopt, true);
  EXPECT_EQ(wire::to_json(p), R"({"name":"echo","input":{"text":"hi"},"session_id":"sess-A","cwd":"/home/me/chat"})");
}

TEST(ToolCallParams, WorkerCallHasNullSessionIdKeyAndItsCwd) {
  auto p = tool_call_params("echo", boost::json::object(), std::nullopt, std::filesystem::path("/srv/worker-folder"), std::nullopt, true);
  ASSERT_TRUE(obj(p).contains("session_id"));
  EXPECT_TRUE(obj(p).at("session_id").is_null());
  EXPECT_EQ(obj(p).at("cwd").as_string(), "/srv/worker-folder");
}

TEST(ToolCallParams, KillSwitchForcesNullSessionIdAndLeavesCwd) {
  auto p = tool_call_params("echo", boost::json::object(), std::string("sess-A"), std::filesystem::path("/c"), std::nullopt, false);
  EXPECT_TRUE(obj(p).at("session_id").is_null());
  EXPECT_EQ(obj(p).at("cwd").as_string(), "/c");
  EXPECT_EQ(obj(p).at("name").as_string(), "echo");
}

TEST(ToolCallParams, NoSessionFolderSendsTheProcessFolder) {
  auto p = tool_call_params("echo", boost::json::object(), std::nullopt, std::nullopt, std::nullopt, true);
  EXPECT_EQ(obj(p).at("cwd").as_string(), std::filesystem::current_path().string());
}

TEST(ToolCallParams, CallerIsTheAuthorAsItSerialises) {
  const Author chat = Author::fresh();
  const Author worker = chat.child();
  ASSERT_TRUE(chat.valid());
  ASSERT_TRUE(worker.valid());
  for (bool gate : {true, false}) {
    auto pc = tool_call_params("t", boost::json::object(), std::string("s"), std::nullopt, chat, gate);
    const auto& c = obj(pc).at("caller").as_object();
    EXPECT_EQ(c.size(), 2u);
    EXPECT_FALSE(c.contains("parent"));
    EXPECT_EQ(Author::from_json(obj(pc).at("caller")), chat);
    auto pw = tool_call_params("t", boost::json::object(), std::nullopt, std::nullopt, worker, gate);
    EXPECT_EQ(obj(pw).at("caller").as_object().size(), 3u);
    auto round = Author::from_json(obj(pw).at("caller"));
    ASSERT_TRUE(round);
    EXPECT_TRUE(round->valid());
    EXPECT_EQ(round->parent, chat.actor);
  }
}

TEST(ToolCallParams, NoCallerIsNoKey) {
  auto p = tool_call_params("t", boost::json::object(), std::nullopt, std::nullopt, std::nullopt, true);
  EXPECT_EQ(obj(p).size(), 4u);
  EXPECT_FALSE(obj(p).contains("caller"));
  Author invalid{"me", "group-00000000000000000000000000000000", std::nullopt};
  auto q = tool_call_params("t", boost::json::object(), std::nullopt, std::nullopt, invalid, true);
  EXPECT_EQ(obj(q).size(), 4u);
  EXPECT_FALSE(obj(q).contains("caller"));
}

}  // namespace
}  // namespace exthost::protocol
