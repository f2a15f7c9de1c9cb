// What the host accepts in an `initialize` answer: the declared concurrency, cancellation
// and idempotent tools, and the errors that name what is wrong.
#include "protocol/initialize.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace exthost::protocol {
namespace {

Result<InitializeResult> parse(const char* caps) {
  return parse_initialize_result("ext", boost::json::parse(std::string(R"({"protocol_version":1,"capabilities":)") +
                                                           caps + "}"));
}

TEST(InitializeResult, UndeclaredConcurrencyIsOneAndNoCancellation) {
  auto r = parse("{}");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->concurrency, 1u);
  EXPECT_FALSE(r->cancellation);
}

TEST(InitializeResult, ConcurrencyAndCancellationAreTakenAsDeclared) {
  auto r = parse(R"({"concurrency":64,"cancellation":true})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->concurrency, 64u);
  EXPECT_TRUE(r->cancellation);
}

TEST(InitializeResult, ANullConcurrencyIsRefusedNotTakenAsAbsent) {
  auto r = parse(R"({"concurrency":null})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "Invalid initialize response from extension 'ext': capabilities.concurrency must be an integer from 1 "
            "to 64, got null");
  EXPECT_EQ(r.error().cause, ErrorCause::protocol);
}

TEST(InitializeResult, AConcurrencyOutOfRangeOrFractionalIsRefused) {
  for (const char* caps : {R"({"concurrency":0})", R"({"concurrency":65})", R"({"concurrency":-1})",
                           R"({"concurrency":2.5})", R"({"concurrency":18446744073709551615})"}) {
    auto r = parse(caps);
    EXPECT_FALSE(r) << caps;
  }
}

TEST(InitializeResult, ACancellationThatIsNotABooleanIsRefused) {
  auto r = parse(R"({"cancellation":"yes"})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "Invalid initialize response from extension 'ext': capabilities.cancellation must be a boolean, got "
            "string \"yes\"");
}

TEST(InitializeResult, AnIdempotentFlagThatIsNotABooleanNamesTheTool) {
  auto r = parse(R"({"tools":[{"name":"wipe","description":"d","input_schema":{},"idempotent":"true"}]})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "Invalid initialize response from extension 'ext': tool 'wipe' `idempotent`: invalid type: string "
            "\"true\", expected a boolean");
}

TEST(InitializeResult, IdempotentToolsAreMarkedAndOthersAreNot) {
  auto r = parse(R"({"tools":[{"name":"read","description":"d","input_schema":{},"idempotent":true},)"
                 R"({"name":"write","description":"d","input_schema":{}}]})");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->tools.size(), 2u);
  EXPECT_TRUE(r->tools[0].idempotent);
  EXPECT_FALSE(r->tools[1].idempotent);
}

}  // namespace
}  // namespace exthost::protocol
