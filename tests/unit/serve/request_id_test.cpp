// The raw text of a request's id, as the scan of the top-level object finds it.
#include "serve/request_id.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace {

using exthost::server::raw_member;

std::string raw_id(std::string_view text) {
  auto v = raw_member(text, "id");
  return v ? std::string(*v) : std::string("<none>");
}

TEST(RequestId, NumbersKeepTheirSpelling) {
  EXPECT_EQ(raw_id(R"({"jsonrpc":"2.0","id":1e400,"method":"m"})"), "1e400");
  EXPECT_EQ(raw_id(R"({"id":18446744073709551616})"), "18446744073709551616");
  EXPECT_EQ(raw_id(R"({"id":-0})"), "-0");
  EXPECT_EQ(raw_id(R"({"method":"m","id":1.0})"), "1.0");
  EXPECT_EQ(raw_id("{ \"id\" :\t 1E2 \n, \"x\":1}"), "1E2");
}

TEST(RequestId, StringsKeepTheirEscapes) {
  EXPECT_EQ(raw_id(R"({"id":"a\u0062\"c"})"), R"("a\u0062\"c")");
  EXPECT_EQ(raw_id(R"({"id":"}],{"})"), R"("}],{")");
}

TEST(RequestId, OnlyTheTopLevelCountsAndTheLastRepeatWinsAsInTheParser) {
  const std::string text = R"({"params":{"id":1,"list":[{"id":2},"id"]},"id":3,"x":"\"id\":4","id":5})";
  EXPECT_EQ(raw_id(text), "5");
  EXPECT_EQ(boost::json::serialize(boost::json::parse(text).at("id")), "5");
  EXPECT_EQ(raw_id(R"({"params":{"id":1}})"), "<none>");
}

TEST(RequestId, AnEscapedKeyIsStillTheKey) {
  EXPECT_EQ(raw_id(R"({"\u0069d":42})"), "42");
  EXPECT_EQ(raw_id(R"({"i\u0064x":1,"idx":2})"), "<none>");
}

TEST(RequestId, ANonObjectHasNoMember) {
  EXPECT_EQ(raw_id("[1,2]"), "<none>");
  EXPECT_EQ(raw_id("{}"), "<none>");
}

}  // namespace
