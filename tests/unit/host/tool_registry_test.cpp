// Tool namespacing and API names (SPEC §6.15).
#include "host/tool_registry.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

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

namespace exthost::host {
namespace {

TEST(ToolRegistry, InputPropertyNamesAreMadeApiSafeAndMappedBackAtEveryDepth) {
  const auto schema = boost::json::parse(R"({"type":"object","required":["file path"],"properties":{
      "file path":{"type":"string"},
      "opts":{"type":"object","properties":{"max/depth":{"type":"integer"},"a.b":{"type":"string"}}},
      "items":{"type":"array","items":{"type":"object","properties":{"x y":{"type":"number"}}}}}})");
  ToolRegistry r;
  r.register_plugin("p", {protocol::ToolSpec{"t", "d", schema}});
  const auto api = r.find("p:t")->api_input_schema;
  EXPECT_EQ(boost::json::serialize(api.at("required")), R"(["file_path"])");
  EXPECT_TRUE(api.at("properties").as_object().contains("file_path"));
  EXPECT_TRUE(api.at("properties").at("opts").at("properties").as_object().contains("max_depth"));
  EXPECT_TRUE(api.at("properties").at("opts").at("properties").as_object().contains("a.b")) << "dots are allowed";
  const auto restored = restore_input_names(
      schema, boost::json::parse(R"({"file_path":"/tmp/x","opts":{"max_depth":2},"items":[{"x_y":1}],"extra":true})"));
  EXPECT_EQ(boost::json::serialize(restored),
            R"({"file path":"/tmp/x","opts":{"max/depth":2},"items":[{"x y":1}],"extra":true})");
}

TEST(ToolRegistry, PropertyNameCollisionsAndLengthsStayWithinTheCap) {
  EXPECT_EQ(sanitize_property_name(std::string(100, 'k')).size(), k_max_api_property);
  const auto schema = boost::json::parse(R"({"properties":{"a b":{},"a_b":{}}})");
  ToolRegistry r;
  r.register_plugin("p", {protocol::ToolSpec{"t", "d", schema}});
  const auto tool = r.find("p:t");  // a copy: find() returns by value
  ASSERT_TRUE(tool);
  const auto& props = tool->api_input_schema.at("properties").as_object();
  EXPECT_TRUE(props.contains("a_b"));
  EXPECT_TRUE(props.contains("a_b_2"));
  EXPECT_EQ(boost::json::serialize(restore_input_names(schema, boost::json::parse(R"({"a_b":1,"a_b_2":2})"))),
            R"({"a b":1,"a_b":2})");
}

}  // namespace
}  // namespace exthost::host
