// Error frames stay under the cap by leaving out, in order, the large parts of their data,
// the rest of the data, then the id.
#include "serve/reply.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "wire/frame_parser.hpp"

namespace {

namespace json = boost::json;
using exthost::server::error_frame;
using exthost::server::k_max_output_body;

// The body of one frame.
json::object body_of(const std::string& frame) {
  exthost::wire::FrameParser parser("test");
  auto step = parser.feed(frame);
  EXPECT_TRUE(step.body.has_value());
  return step.body ? json::parse(*step.body).as_object() : json::object{};
}

TEST(ErrorFrame, SmallDataIsWrittenWhole) {
  const json::value data = json::object{{"kind", "extension"}, {"data", {{"reason", "r"}}}};
  const json::value smaller = json::object{{"kind", "extension"}};
  const auto body = body_of(error_frame("3", -32002, "m", &data, &smaller));
  EXPECT_EQ(body.at("id"), 3);
  EXPECT_EQ(json::serialize(body.at("error").at("data")), R"({"kind":"extension","data":{"reason":"r"}})");
}

TEST(ErrorFrame, DataOverTheCapGivesWayToTheSmallerData) {
  const json::value data = json::object{{"kind", "extension"}, {"data", std::string(k_max_output_body, 'x')}};
  const json::value smaller = json::object{{"kind", "extension"}};
  const std::string frame = error_frame(R"("id-1")", -32002, "m", &data, &smaller);
  const auto body = body_of(frame);
  EXPECT_EQ(body.at("id"), "id-1");
  EXPECT_EQ(json::serialize(body.at("error").at("data")), R"({"kind":"extension"})");
}

TEST(ErrorFrame, WithoutSmallerDataTheDataIsLeftOut) {
  const json::value data = json::object{{"data", std::string(k_max_output_body, 'x')}};
  const auto body = body_of(error_frame("4", -32002, "m", &data));
  EXPECT_EQ(body.at("id"), 4);
  EXPECT_FALSE(body.at("error").as_object().contains("data"));
}

TEST(ErrorFrame, AMessageOverItsCapIsCutAtACharacterAndMarked) {
  using exthost::server::k_max_error_message;
  // A two-byte character across the cap: the cut keeps it whole or leaves it out.
  const std::string message = std::string(k_max_error_message - 1, 'a') + "\xc3\xa9" + std::string(10, 'b');
  const auto body = body_of(error_frame("5", -32002, message));
  const std::string shown(body.at("error").at("message").as_string());
  const std::string kept(k_max_error_message - 1, 'a');
  EXPECT_EQ(shown, kept + " [cut: 12 more bytes of " + std::to_string(message.size()) + "]");
}

TEST(ErrorFrame, AMessageWithinItsCapIsWrittenWhole) {
  const std::string message(exthost::server::k_max_error_message, 'a');
  const auto body = body_of(error_frame("6", -32002, message));
  EXPECT_EQ(body.at("error").at("message").as_string(), message);
}

}  // namespace
