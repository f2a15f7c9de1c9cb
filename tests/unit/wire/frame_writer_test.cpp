#include "wire/frame_writer.hpp"

#include <gtest/gtest.h>

#include "wire/frame_parser.hpp"

namespace exthost::wire {
namespace {

TEST(FrameWriter, WritesExactlyTheHeaderAndTheBody) {
  EXPECT_EQ(FrameWriter::frame("{}"), "Content-Length: 2\r\n\r\n{}");
  EXPECT_EQ(FrameWriter::frame(""), "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(FrameWriter::frame("\xC3\xA9"), "Content-Length: 2\r\n\r\n\xC3\xA9") << "the length counts bytes";
}

TEST(FrameWriter, BatchedFramesParseBackInOrder) {
  std::string batch;
  FrameWriter::append(batch, R"({"a":1})");
  FrameWriter::append(batch, "[]");
  FrameParser parser("ext");
  std::string_view rest = batch;
  std::vector<std::string> bodies;
  while (!rest.empty()) {
    auto step = parser.feed(rest);
    ASSERT_FALSE(step.error);
    rest.remove_prefix(step.consumed);
    if (step.body) bodies.emplace_back(*step.body);
  }
  EXPECT_EQ(bodies, (std::vector<std::string>{R"({"a":1})", "[]"}));
  EXPECT_FALSE(parser.finish());
}

}  // namespace
}  // namespace exthost::wire
