// Ported from the reference's provider tool-use tests (SPEC §8.20), without a process.
#include "runtime/provider_tool_loop.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include "../../support/bounded.hpp"
#include "wire/json.hpp"

namespace exthost::runtime {
namespace {

using exthost::testing::run_bounded;

class Scripted final : public ToolGate, public ToolRunner {
 public:
  boost::asio::awaitable<std::optional<std::string>> deny(const protocol::ProviderToolUse& use) override {
    if (use.name == "blocked") co_return "blocked in test";
    co_return std::nullopt;
  }
  boost::asio::awaitable<Result<std::string>> run(const protocol::ProviderToolUse& use) override {
    ++runs;
    if (use.name == "fails") co_return Error::extension("boom");
    co_return std::string("out:") + wire::to_json(use.input);
  }
  int runs = 0;
};

boost::json::value result_of(const char* name, std::size_t max_output = 1024) {
  boost::asio::io_context io;
  Scripted tools;
  protocol::ProviderToolUse use{"toolu_1", name, boost::json::parse(R"({"a":1})")};
  auto r = run_bounded(io, execute_provider_tool_use(use, tools, tools, max_output));
  return r ? *r : boost::json::value();
}

TEST(ProviderToolUse, ExecutesAnAllowedToolWithoutAnErrorMark) {
  EXPECT_EQ(wire::to_json(result_of("echo")), R"({"type":"tool_result","tool_use_id":"toolu_1","content":"out:{\"a\":1}"})");
}

TEST(ProviderToolUse, MarksAFailedExecutionAsAnError) {
  EXPECT_EQ(wire::to_json(result_of("fails")),
            R"({"type":"tool_result","tool_use_id":"toolu_1","content":"Tool execution failed: boom","is_error":true})");
}

TEST(ProviderToolUse, ADeniedToolNeverRuns) {
  boost::asio::io_context io;
  Scripted tools;
  protocol::ProviderToolUse use{"toolu_1", "blocked", boost::json::object()};
  auto r = run_bounded(io, execute_provider_tool_use(use, tools, tools, 1024));
  ASSERT_TRUE(r);
  EXPECT_EQ(wire::to_json(*r), R"({"type":"tool_result","tool_use_id":"toolu_1","content":"blocked in test","is_error":true})");
  EXPECT_EQ(tools.runs, 0);
}

TEST(ProviderToolUse, OutputIsCutToTheLimitOnACharacterBoundary) {
  EXPECT_EQ(result_of("echo", 6).as_object().at("content").as_string(), "out:{\"");
}

TEST(ProviderToolUse, TheDefaultDeniesEverything) {
  boost::asio::io_context io;
  DenyAllTools deny;
  protocol::ProviderToolUse use{"t", "anything", boost::json::object()};
  auto r = run_bounded(io, execute_provider_tool_use(use, deny, deny, 1024));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->as_object().at("content").as_string(), "tool 'anything' is not available to extension providers");
  EXPECT_TRUE(r->as_object().at("is_error").as_bool());
}

}  // namespace
}  // namespace exthost::runtime
