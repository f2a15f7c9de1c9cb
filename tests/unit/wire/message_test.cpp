#include "wire/message.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "wire/json.hpp"

namespace exthost::wire {
namespace {

Message classify_text(const char* text) { return classify(boost::json::parse(text)); }

TEST(Classify, NumericIdWithoutMethodIsAResponse) {
  auto m = classify_text(R"({"jsonrpc":"2.0","id":7,"result":{"ok":true}})");
  auto* r = std::get_if<Response>(&m);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 7u);
  ASSERT_TRUE(r->outcome.ok());
  EXPECT_EQ(to_json(r->outcome.value()), R"({"ok":true})");
}

TEST(Classify, MissingResultIsNull) {
  auto m = classify_text(R"({"id":1})");
  ASSERT_TRUE(std::get<Response>(m).outcome.ok());
  EXPECT_TRUE(std::get<Response>(m).outcome.value().is_null());
}

TEST(Classify, ErrorMemberBecomesAnApplicationErrorAndWinsOverResult) {
  auto m = classify_text(R"({"id":3,"result":1,"error":{"code":-32601,"message":"unknown method"}})");
  const auto& r = std::get<Response>(m);
  ASSERT_FALSE(r.outcome.ok());
  EXPECT_EQ(r.outcome.error().message, "Extension error: unknown method");
  EXPECT_TRUE(is_application_error(r.outcome.error()));
  EXPECT_EQ(r.outcome.error().code, -32601);
  EXPECT_FALSE(r.outcome.error().data_json);
  auto no_message = classify_text(R"({"id":3,"error":{"code":1}})");
  EXPECT_EQ(std::get<Response>(no_message).outcome.error().message, "Extension error: unknown extension error");
}

TEST(Classify, AnErrorKeepsTheExtensionsCodeAndData) {
  auto m = classify_text(R"({"id":4,"error":{"code":-32050,"message":"quota","data":{"retry_after":3}}})");
  const auto& e = std::get<Response>(m).outcome.error();
  EXPECT_EQ(e.cause, ErrorCause::application);
  EXPECT_EQ(e.code, -32050);
  EXPECT_EQ(e.data_json, std::optional<std::string>(R"({"retry_after":3})"));
  // A code that is not an integer is not kept; the error still is one.
  auto odd = classify_text(R"({"id":4,"error":{"code":"x","message":"m"}})");
  EXPECT_EQ(std::get<Response>(odd).outcome.error().cause, ErrorCause::application);
  EXPECT_FALSE(std::get<Response>(odd).outcome.error().code);
}

TEST(Classify, NullErrorCountsAsAbsent) {
  auto m = classify_text(R"({"id":3,"result":5,"error":null})");
  ASSERT_TRUE(std::get<Response>(m).outcome.ok());
  EXPECT_EQ(std::get<Response>(m).outcome.value().as_int64(), 5);
}

TEST(Classify, NonNumericResponseIdsAreDiscarded) {
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"({"id":"7","result":1})")));
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"({"id":-1,"result":1})")));
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"({"id":1.5,"result":1})")));
}

TEST(Classify, InboundRequestKeepsItsIdVerbatim) {
  auto s = classify_text(R"({"id":"evt-1000","method":"memory.append","params":{"a":1}})");
  const auto& req = std::get<InboundRequest>(s);
  EXPECT_EQ(to_json(req.id), R"("evt-1000")");
  EXPECT_EQ(req.method, "memory.append");
  EXPECT_EQ(to_json(req.params), R"({"a":1})");
  auto n = classify_text(R"({"id":1001,"method":"x"})");
  EXPECT_EQ(to_json(std::get<InboundRequest>(n).id), "1001");
  EXPECT_TRUE(std::get<InboundRequest>(n).params.is_null());
}

TEST(Classify, InboundRequestWithABadIdTypeIsDiscarded) {
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"({"id":true,"method":"x"})")));
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"({"id":{},"method":"x"})")));
}

TEST(Classify, MethodWithoutIdOrWithNullIdIsANotification) {
  auto m = classify_text(R"({"method":"command.output","params":[1]})");
  EXPECT_EQ(std::get<Notification>(m).method, "command.output");
  auto n = classify_text(R"({"id":null,"method":"test.notify"})");
  EXPECT_EQ(std::get<Notification>(n).method, "test.notify");
  EXPECT_TRUE(std::get<Notification>(n).params.is_null());
}

TEST(Classify, AnythingElseIsDiscarded) {
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"({"jsonrpc":"2.0"})")));
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"([1,2])")));
  EXPECT_TRUE(std::holds_alternative<Discarded>(classify_text(R"({"method":5})")));
}

TEST(JsonParser, RejectsNestingBeyondTheLimitWithoutCrashing) {
  JsonParser parser;
  const std::string ok = std::string(k_max_json_depth - 1, '[') + std::string(k_max_json_depth - 1, ']');
  EXPECT_TRUE(parser.parse(ok).ok());
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  auto r = parser.parse(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "too deep") << r.error().message;
  EXPECT_TRUE(parser.parse("{}").ok()) << "the parser is reusable after an error";
}

TEST(JsonParser, RejectsInvalidUtf8AndTrailingData) {
  JsonParser parser;
  EXPECT_FALSE(parser.parse("\"\xff\"").ok());
  EXPECT_FALSE(parser.parse("{} x").ok());
  EXPECT_FALSE(parser.parse("").ok());
}

TEST(Encode, RequestFieldsComeInTheReferenceOrder) {
  EXPECT_EQ(encode_request("tool.call", boost::json::parse(R"({"a":1})"), 4),
            R"({"jsonrpc":"2.0","method":"tool.call","params":{"a":1},"id":4})");
  EXPECT_EQ(encode_request("shutdown", nullptr, 9), R"({"jsonrpc":"2.0","method":"shutdown","params":null,"id":9})");
}

TEST(Encode, RepliesEchoTheIdVerbatim) {
  EXPECT_EQ(encode_error_reply(boost::json::value("evt-1"), -32601, "method not found: x"),
            R"({"jsonrpc":"2.0","id":"evt-1","error":{"code":-32601,"message":"method not found: x"}})");
  EXPECT_EQ(encode_result_reply(boost::json::value(12), boost::json::value(true)), R"({"jsonrpc":"2.0","id":12,"result":true})");
}

}  // namespace
}  // namespace exthost::wire
