#include "wire/frame_parser.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace exthost::wire {
namespace {

// What a parser made of a stream: each body, then either an error or the EOF verdict.
struct Transcript {
  std::vector<std::string> bodies;
  std::optional<std::string> error;  // a feed error, or finish()'s error
  bool clean_eof = false;
  friend bool operator==(const Transcript&, const Transcript&) = default;
};

std::ostream& operator<<(std::ostream& os, const Transcript& t) {
  os << "{bodies:[";
  for (const auto& b : t.bodies) os << '"' << b << "\",";
  os << "] error:" << (t.error ? *t.error : "-") << " clean_eof:" << t.clean_eof << "}";
  return os;
}

// Feeds `chunks` in order, then ends the stream.
Transcript run(const std::vector<std::string>& chunks) {
  FrameParser parser("ext");
  Transcript t;
  for (const auto& chunk : chunks) {
    std::string_view rest = chunk;
    while (!rest.empty()) {
      auto step = parser.feed(rest);
      rest.remove_prefix(step.consumed);
      if (step.body) t.bodies.emplace_back(*step.body);
      if (step.error) {
        t.error = step.error;
        return t;
      }
      if (step.consumed == 0 && !step.body) ADD_FAILURE() << "parser made no progress";
    }
  }
  t.error = parser.finish();
  t.clean_eof = !t.error.has_value();
  return t;
}

// The same stream whole, split at every byte boundary, and byte by byte: all must agree.
void expect_same_everywhere(const std::string& stream, const Transcript& expected) {
  EXPECT_EQ(run({stream}), expected) << "whole";
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    EXPECT_EQ(run({stream.substr(0, cut), stream.substr(cut)}), expected) << "split at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  EXPECT_EQ(run(bytes), expected) << "byte by byte";
}

Transcript bodies(std::vector<std::string> b) { return Transcript{std::move(b), std::nullopt, true}; }
Transcript failed(std::vector<std::string> b, std::string error) { return Transcript{std::move(b), std::move(error), false}; }

TEST(FrameParser, ReadsOneFrame) {
  expect_same_everywhere("Content-Length: 2\r\n\r\n{}", bodies({"{}"}));
}

TEST(FrameParser, ReadsTwoFramesInOneRead) {
  expect_same_everywhere("Content-Length: 2\r\n\r\n{}Content-Length: 7\r\n\r\n[1,2,3]", bodies({"{}", "[1,2,3]"}));
}

TEST(FrameParser, EmptyStreamIsACleanEof) { EXPECT_EQ(run({}), bodies({})); }

TEST(FrameParser, MatchesContentLengthCaseInsensitively) {
  expect_same_everywhere("content-LENGTH: 2\r\n\r\n{}", bodies({"{}"}));
}

TEST(FrameParser, IgnoresOtherHeadersAndLinesWithoutColon) {
  expect_same_everywhere("Content-Type: application/json\r\nnonsense\r\nContent-Length: 2\r\n\r\n{}", bodies({"{}"}));
}

TEST(FrameParser, LaterContentLengthOverridesEarlier) {
  expect_same_everywhere("Content-Length: 99\r\nContent-Length: 2\r\n\r\n{}", bodies({"{}"}));
}

TEST(FrameParser, AcceptsBareNewlinesAndSurroundingWhitespace) {
  expect_same_everywhere("  Content-Length :   2  \n\n{}", bodies({"{}"}));
}

TEST(FrameParser, AcceptsAZeroLengthBody) { expect_same_everywhere("Content-Length: 0\r\n\r\n", bodies({""})); }

TEST(FrameParser, RejectsHeaderLineLongerThanOneKibibyte) {
  const std::string line = "X-Pad: " + std::string(1024 - 7 - 2, 'a') + "\r\n";  // exactly 1024 bytes: allowed
  ASSERT_EQ(line.size(), 1024u);
  expect_same_everywhere(line + "Content-Length: 2\r\n\r\n{}", bodies({"{}"}));
  const std::string too_long = "X-Pad: " + std::string(1024 - 7 - 1, 'a') + "\r\n";  // 1025 bytes
  expect_same_everywhere(too_long, failed({}, "Extension 'ext' header line too long (1025 bytes)"));
}

TEST(FrameParser, RejectsAFrameWhoseHeadersTogetherExceed64KiB) {
  // 64 lines of exactly 1024 bytes: 65536 bytes of headers, allowed; one byte more is not.
  std::string headers;
  for (int i = 0; i < 64; ++i) headers += "X-Pad: " + std::string(1024 - 7 - 2, 'a') + "\r\n";
  ASSERT_EQ(headers.size(), k_max_header_block);
  Transcript at_cap = run({headers + "\r\nContent-Length: 2\r\n\r\n{}"});
  EXPECT_EQ(at_cap.error, std::optional<std::string>("Extension 'ext' frame headers too long (more than 65536 bytes)"))
      << "the blank line ending the headers counts too";
  std::string fits;
  for (int i = 0; i < 63; ++i) fits += "X-Pad: " + std::string(1024 - 7 - 2, 'a') + "\r\n";
  EXPECT_EQ(run({fits + "Content-Length: 2\r\n\r\n{}"}), bodies({"{}"}));
  // Endless short lines end in an error, not in an endless read; the next frame's count starts afresh.
  std::string bomb;
  for (int i = 0; i < 20000; ++i) bomb += "X: y\r\n";
  EXPECT_EQ(run({bomb}), failed({}, "Extension 'ext' frame headers too long (more than 65536 bytes)"));
  EXPECT_EQ(run({fits + "Content-Length: 2\r\n\r\n{}" + fits + "Content-Length: 2\r\n\r\n[]"}), bodies({"{}", "[]"}));
}

TEST(FrameParser, NeverBuffersMoreThan1025BytesOfANewlinelessHeader) {
  const std::string flood(5000, 'x');
  FrameParser parser("ext");
  auto step = parser.feed(flood);
  EXPECT_EQ(step.consumed, k_header_read_bound);
  ASSERT_TRUE(step.error);
  EXPECT_EQ(*step.error, "Extension 'ext' header line too long (1025 bytes)");
}

TEST(FrameParser, RejectsMissingContentLength) {
  expect_same_everywhere("Content-Type: x\r\n\r\n{}", failed({}, "Extension 'ext' frame missing Content-Length header"));
}

TEST(FrameParser, RejectsNonNumericNegativeAndOverflowingContentLength) {
  expect_same_everywhere("Content-Length: abc\r\n\r\n", failed({}, "Invalid Content-Length value: \"abc\""));
  expect_same_everywhere("Content-Length: -5\r\n\r\n", failed({}, "Invalid Content-Length value: \"-5\""));
  expect_same_everywhere("Content-Length: \r\n\r\n", failed({}, "Invalid Content-Length value: \"\""));
  expect_same_everywhere("Content-Length: 99999999999999999999\r\n\r\n",
                         failed({}, "Invalid Content-Length value: \"99999999999999999999\""));
  expect_same_everywhere("Content-Length: 1\"2\r\n\r\n", failed({}, "Invalid Content-Length value: \"1\\\"2\""));
}

TEST(FrameParser, RejectsBodiesOverFourMebibytesBeforeAllocating) {
  expect_same_everywhere("Content-Length: 4194304\r\n\r\n", failed({}, "Read body error: early eof"));
  expect_same_everywhere("Content-Length: 4194305\r\n\r\n",
                         failed({}, "Extension 'ext' frame too large: 4194305 bytes (max 4194304)"));
  expect_same_everywhere("Content-Length: 18446744073709551615\r\n\r\n",
                         failed({}, "Extension 'ext' frame too large: 18446744073709551615 bytes (max 4194304)"));
}

TEST(FrameParser, TellsCleanEofFromMidFrameEof) {
  expect_same_everywhere("Content-Length: 2\r\n\r\n{}", bodies({"{}"}));
  expect_same_everywhere("Content-Length: 2\r\n", failed({}, "Unexpected EOF while reading response headers"));
  expect_same_everywhere("Content-Len", failed({}, "Unexpected EOF while reading response headers"));
  expect_same_everywhere("Content-Length: 5\r\n\r\n{}", failed({}, "Read body error: early eof"));
  expect_same_everywhere("Content-Length: 2\r\n\r\n{}Content", failed({"{}"}, "Unexpected EOF while reading response headers"));
}

TEST(FrameParser, RejectsInvalidUtf8InHeaders) {
  expect_same_everywhere("Content-Length: 2\xff\r\n\r\n{}",
                         failed({}, "Read header error: stream did not contain valid UTF-8"));
}

TEST(FrameParser, PassesBodyBytesThroughUntouched) {
  const std::string body = "{\"a\":\"\xff\"}";  // invalid UTF-8 is the JSON parser's business
  expect_same_everywhere("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, bodies({body}));
}

TEST(FrameParser, StopsAtTheFirstErrorAndKeepsEarlierFrames) {
  expect_same_everywhere("Content-Length: 2\r\n\r\n{}Content-Length: x\r\n\r\nContent-Length: 2\r\n\r\n{}",
                         failed({"{}"}, "Invalid Content-Length value: \"x\""));
}

}  // namespace
}  // namespace exthost::wire
