// JSON numbers stay within the double range both ways: beyond it a literal is invalid
// JSON, and a non-finite double is never written as a bare word.
#include "wire/json.hpp"

#include <gtest/gtest.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cmath>
#include <limits>

namespace exthost::wire {
namespace {

std::string error_of(JsonParser& parser, std::string_view text) {
  auto r = parser.parse(text);
  return r ? "(ok) " + to_json(*r) : r.error().message;
}

TEST(JsonNumbers, ALiteralBeyondTheDoubleRangeIsRefusedWithWhereItIs) {
  JsonParser parser;
  EXPECT_EQ(error_of(parser, "1e999"), "number out of range at byte 0: 1e999");
  EXPECT_EQ(error_of(parser, R"({"jsonrpc":"2.0","id":1,"result":{"value":-1e400}})"),
            "number out of range at byte 42: -1e400");
  EXPECT_EQ(error_of(parser, "[1, 2, 1.8e308]"), "number out of range at byte 7: 1.8e308");
  // An integer too long for 64 bits is read as a double, and may overflow too.
  const std::string digits(400, '9');
  EXPECT_EQ(error_of(parser, "[" + digits + "]"), "number out of range at byte 1: " + digits.substr(0, 32) + "…");
}

TEST(JsonNumbers, EverythingWithinTheRangeIsKept) {
  JsonParser parser;
  EXPECT_EQ(error_of(parser, "[1.7976931348623157e308,-1.7976931348623157e308]"),
            "(ok) [1.7976931348623157E308,-1.7976931348623157E308]");
  EXPECT_EQ(error_of(parser, "[1e-999,5e-324]"), "(ok) [0E0,5E-324]") << "underflow rounds to zero, as in any parser";
  EXPECT_EQ(error_of(parser, "[18446744073709551615,-9223372036854775808]"),
            "(ok) [18446744073709551615,-9223372036854775808]");
}

TEST(JsonNumbers, TheParserIsReusableAfterARefusedNumber) {
  JsonParser parser;
  EXPECT_FALSE(parser.parse(R"({"a":[1e999]})"));
  EXPECT_EQ(error_of(parser, R"({"a":[1.5]})"), R"((ok) {"a":[1.5E0]})");
  EXPECT_EQ(error_of(parser, "{} x"), "extra data");
  EXPECT_EQ(error_of(parser, "[1,"), "incomplete JSON");
}

TEST(JsonNumbers, ANonFiniteDoubleIsNeverWrittenAsABareWord) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(to_json(boost::json::value(inf)), R"("Infinity")");
  EXPECT_EQ(to_json(boost::json::value(-inf)), R"("-Infinity")");
  EXPECT_EQ(to_json(boost::json::value(std::nan(""))), R"("NaN")");
  const boost::json::value nested = boost::json::object{{"a", boost::json::array{1, inf, "x"}}, {"b", 2.5}};
  EXPECT_FALSE(all_numbers_finite(nested));
  EXPECT_EQ(to_json(nested), R"({"a":[1,"Infinity","x"],"b":2.5E0})");
  EXPECT_EQ(encode_result_reply(boost::json::value(3), nested),
            R"({"jsonrpc":"2.0","id":3,"result":{"a":[1,"Infinity","x"],"b":2.5E0}})");
  EXPECT_EQ(encode_request("tool.call", boost::json::array{-inf}, 4),
            R"({"jsonrpc":"2.0","method":"tool.call","params":["-Infinity"],"id":4})");
  EXPECT_EQ(encode_notification("n", boost::json::array{std::nan("")}), R"({"jsonrpc":"2.0","method":"n","params":["NaN"]})");
  // Whatever is written parses again.
  JsonParser parser;
  EXPECT_TRUE(parser.parse(to_json(nested)));
  EXPECT_TRUE(all_numbers_finite(boost::json::object{{"a", 1.5}, {"b", boost::json::array{1, 2}}}));
}

}  // namespace
}  // namespace exthost::wire
