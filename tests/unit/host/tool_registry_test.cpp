// Tool namespacing and API names (SPEC §6.15).
#include "host/tool_registry.hpp"

#include <gtest/gtest.h>

namespace exthost::host {
namespace {

protocol::ToolSpec spec(std::string name) { return protocol::ToolSpec{std::move(name), "d", boost::json::object()}; }

TEST(ToolRegistry, NamesToolsByPluginAndMakesApiSafeNames) {
  ToolRegistry r;
  r.register_plugin("register-tool-test", {spec("echo")});
  r.register_plugin("policy-bundle", {spec("echo")});
  auto t = r.find("register-tool-test:echo");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->api_name, "register-tool-test_echo");
  EXPECT_EQ(t->tool_name, "echo");
  EXPECT_EQ(r.find("policy-bundle_echo")->runtime_name, "policy-bundle:echo");
  EXPECT_EQ(r.tools().front().runtime_name, "policy-bundle:echo");
  EXPECT_FALSE(r.find("nobody:echo"));
}

TEST(ToolRegistry, CollisionsGetNumberedSuffixesWithinTheLengthCap) {
  ToolRegistry r;
  r.register_plugin("a", {spec("b.c"), spec("b_c")});
  EXPECT_EQ(r.find("a:b.c")->api_name, "a_b_c");
  EXPECT_EQ(r.find("a:b_c")->api_name, "a_b_c_2");
  const std::string long_name(200, 'x');
  r.register_plugin("p", {spec(long_name), spec(long_name + "y")});
  const auto first = r.find("p:" + long_name)->api_name;
  const auto second = r.find("p:" + long_name + "y")->api_name;
  EXPECT_EQ(first.size(), k_max_api_name);
  EXPECT_EQ(second.size(), k_max_api_name);
  EXPECT_EQ(second.substr(second.size() - 2), "_2");
}

TEST(ToolRegistry, UnregisteringAPluginRemovesOnlyItsTools) {
  ToolRegistry r;
  r.register_plugin("a", {spec("x")});
  r.register_plugin("b", {spec("y")});
  r.unregister_plugin("a");
  EXPECT_FALSE(r.find("a:x"));
  EXPECT_TRUE(r.find("b:y"));
  EXPECT_EQ(r.tools_of("b").size(), 1u);
}

TEST(ToolRegistry, SanitizeReplacesForeignCharactersAndNamesTheEmpty) {
  EXPECT_EQ(sanitize_api_name("a:b c/é"), "a_b_c___");
  EXPECT_EQ(sanitize_api_name(""), "field");
}

}  // namespace
}  // namespace exthost::host
