// Ported from the reference's stream_event_tests and provider tool-use tests (SPEC §8.2, §8.20)
// and the provider spec validation of §5.6.3.
#include "protocol/provider.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace exthost::protocol {
namespace {

Result<ProviderStreamEvent> ev(const char* text) { return parse_provider_stream_event(boost::json::parse(text)); }
std::string err(const char* text) {
  auto r = ev(text);
  return r.ok() ? "(ok)" : r.error().message;
}

TEST(ProviderStreamEvent, ParsesTextWithDeltaOrText) {
  EXPECT_EQ(std::get<stream_event::TextDelta>(*ev(R"({"type":"text","delta":"hi"})")).text, "hi");
  EXPECT_EQ(std::get<stream_event::TextDelta>(*ev(R"({"type":"text","text":"hi"})")).text, "hi");
  EXPECT_EQ(std::get<stream_event::ThinkingDelta>(*ev(R"({"type":"thinking","delta":"hm"})")).text, "hm");
  EXPECT_EQ(std::get<stream_event::ThinkingDelta>(*ev(R"({"type":"thinking","text":"hm"})")).text, "hm");
}

TEST(ProviderStreamEvent, ParsesToolUseUsageErrorAndDone) {
  const auto tu = std::get<stream_event::ToolUse>(*ev(R"({"type":"tool_use","id":"t1","name":"echo","input":{"a":1}})"));
  EXPECT_EQ(tu.id, "t1");
  EXPECT_EQ(tu.name, "echo");
  EXPECT_EQ(tu.input.as_object().at("a").as_int64(), 1);
  EXPECT_TRUE(std::get<stream_event::ToolUse>(*ev(R"({"type":"tool_use","id":"t","name":"n"})")).input.as_object().empty());
  const auto usage = std::get<stream_event::Usage>(*ev(R"({"type":"usage","input_tokens":4,"output_tokens":2})"));
  EXPECT_EQ(usage.usage.as_object().size(), 2u);
  EXPECT_FALSE(usage.usage.as_object().contains("type"));
  EXPECT_EQ(std::get<stream_event::Error>(*ev(R"({"type":"error","message":"boom"})")).message, "boom");
  EXPECT_TRUE(std::holds_alternative<stream_event::Done>(*ev(R"({"type":"done"})")));
}

TEST(ProviderStreamEvent, NestedShapeMatchesFlat) {
  EXPECT_EQ(std::get<stream_event::TextDelta>(*ev(R"({"event":{"type":"text","delta":"hi"}})")).text, "hi");
  EXPECT_EQ(err(R"({"event":5})"), "provider stream event must be a JSON object");
}

TEST(ProviderStreamEvent, RejectsWithTheReferenceTexts) {
  EXPECT_EQ(err(R"({"delta":"x"})"), "provider stream event missing type");
  EXPECT_EQ(err(R"({"type":"wat"})"), "unknown provider stream event type: wat");
  EXPECT_EQ(err(R"({"type":"tool_use","name":"n"})"), "provider stream tool_use missing id");
  EXPECT_EQ(err(R"({"type":"tool_use","id":"i"})"), "provider stream tool_use missing name");
  EXPECT_EQ(err(R"({"type":"tool_use","id":"","name":"n"})"), "provider stream tool_use id must be non-empty");
  EXPECT_EQ(err(R"({"type":"tool_use","id":"i","name":""})"), "provider stream tool_use name must be non-empty");
  EXPECT_EQ(err(R"({"type":"tool_use","id":"i","name":"n","input":[1]})"), "provider stream tool_use input must be a JSON object");
  EXPECT_EQ(err(R"({"type":"text"})"), "provider stream text event missing 'delta' or 'text'");
  EXPECT_EQ(err(R"({"type":"thinking"})"), "provider stream thinking event missing 'delta' or 'text'");
  EXPECT_EQ(err(R"({"type":"error"})"), "provider stream error missing message");
  EXPECT_EQ(err(R"({"type":"error","message":""})"), "provider stream error message must be non-empty");
  EXPECT_EQ(err("[]"), "provider stream event must be a JSON object");
}

TEST(ProviderToolUses, ExtractsAnthropicToolUseBlocks) {
  auto uses = extract_provider_tool_uses(boost::json::parse(
      R"([{"type":"text","text":"let me check"},{"type":"tool_use","id":"toolu_1","name":"echo","input":{"text":"hi"}},{"type":"tool_use","id":"toolu_2","name":"x"}])").as_array());
  ASSERT_TRUE(uses.ok());
  ASSERT_EQ(uses->size(), 2u);
  EXPECT_EQ((*uses)[0].name, "echo");
  EXPECT_TRUE((*uses)[1].input.as_object().empty());
}

TEST(ProviderToolUses, RejectsToolUseWithoutRequiredFields) {
  auto e = [](const char* text) { return extract_provider_tool_uses(boost::json::parse(text).as_array()).error().message; };
  EXPECT_EQ(e(R"([{"type":"tool_use","name":"n"}])"), "provider tool_use missing id");
  EXPECT_EQ(e(R"([{"type":"tool_use","id":"i"}])"), "provider tool_use missing name");
  EXPECT_EQ(e(R"([{"type":"tool_use","id":" ","name":"n"}])"), "provider tool_use id is empty");
  EXPECT_EQ(e(R"([{"type":"tool_use","id":"i","name":" "}])"), "provider tool_use name is empty");
  EXPECT_EQ(e(R"([{"type":"tool_use","id":"i","name":"n","input":"x"}])"), "provider tool_use 'i' input must be a JSON object");
}

std::string spec_error(const char* providers) {
  auto r = parse_provider_specs("p", boost::json::parse(providers).as_array());
  return r.ok() ? "(ok)" : r.error().message;
}

TEST(ProviderSpecs, AreValidatedWithTheReferenceTexts) {
  EXPECT_EQ(spec_error(R"([{"id":"local","display_name":"L","description":"d","models":[{"id":"m1","capabilities":{"tool_use":true}}],"config_schema":{}}])"), "(ok)");
  EXPECT_EQ(spec_error(R"([{"id":" ","display_name":"L","description":"d","models":[{"id":"m"}]}])"),
            "Extension 'p' registered provider with empty provider id");
  EXPECT_EQ(spec_error(R"([{"id":"a:b","display_name":"L","description":"d","models":[{"id":"m"}]}])"),
            "Extension 'p' registered provider 'a:b' with invalid provider id: must not contain reserved character ':'");
  EXPECT_EQ(spec_error(R"([{"id":"Local","display_name":"L","description":"d","models":[{"id":"m"}]}])"),
            "Extension 'p' registered provider 'Local' with invalid provider id");
  EXPECT_EQ(spec_error(R"([{"id":"l","display_name":" ","description":"d","models":[{"id":"m"}]}])"),
            "Extension 'p' registered provider 'l' with empty display_name");
  EXPECT_EQ(spec_error(R"([{"id":"l","display_name":"L","description":"","models":[{"id":"m"}]}])"),
            "Extension 'p' registered provider 'l' with empty description");
  EXPECT_EQ(spec_error(R"([{"id":"l","display_name":"L","description":"d"}])"),
            "Extension 'p' registered provider 'l' must declare at least one model");
  EXPECT_EQ(spec_error(R"([{"id":"l","display_name":"L","description":"d","models":[{"id":""}]}])"),
            "Extension 'p' registered provider 'l' with empty model id");
  EXPECT_EQ(spec_error(R"([{"id":"l","display_name":"L","description":"d","models":[{"id":"m"},{"id":"m"}]}])"),
            "Extension 'p' registered provider 'l' with duplicate model id 'm'");
  EXPECT_EQ(spec_error(R"([{"id":"l","display_name":"L","description":"d","models":[{"id":"a b"}]}])"),
            "Extension 'p' registered provider 'l' with invalid model id 'a b': must not contain whitespace");
  EXPECT_EQ(spec_error(R"([{"id":"l","display_name":"L","description":"d","models":[{"id":"m"}],"config_schema":[]}])"),
            "Extension 'p' registered provider 'l' with invalid config_schema: config_schema must be a JSON object");
}

}  // namespace
}  // namespace exthost::protocol

namespace exthost::protocol {
namespace {

TEST(ProviderResult, ContentIsRequiredAndTheRestOptional) {
  auto ok = parse_provider_result("p", "provider.complete", boost::json::parse(R"({"content":[{"type":"text","text":"hi"}]})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE(ok->stop_reason);
  EXPECT_EQ(parse_provider_result("p", "provider.stream", boost::json::parse("{}")).error().message,
            "Invalid provider.stream response from extension 'p': missing field `content`");
}

}  // namespace
}  // namespace exthost::protocol
