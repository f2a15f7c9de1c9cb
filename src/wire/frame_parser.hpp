// wire/frame_parser.hpp — incremental reader of Content-Length frames. No I/O.
//
// Promise: feed it the bytes of a child's stdout in any split; it yields each frame's body
// exactly once and in order, or one error after which the stream is dead (the reference
// design drops the transport on any framing error). Memory is bounded: a header line is
// never buffered past k_header_read_bound bytes and a body is refused before it is
// allocated when it declares more than k_max_frame_body bytes.
//
// Error texts are the reference design's, verbatim (SPEC §1.3).
//
// Not thread-safe: one parser per stream, driven by that stream's reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace exthost::wire {

// A header line is "Content-Length: N\r\n" or a short custom header; anything longer is a
// peer streaming garbage, and the reference refuses it.
inline constexpr std::size_t k_max_header_line = 1024;
// All header lines of one frame together: real frames carry one or two short headers; a
// peer sending endless short lines would otherwise keep the reader busy forever.
inline constexpr std::size_t k_max_header_block = 64 * 1024;
// The most bytes of one header line ever held: one past the limit, to tell "too long".
inline constexpr std::size_t k_header_read_bound = k_max_header_line + 1;
// A frame body may not exceed 4 MiB: the reference's cap, large enough for any tool
// result and small enough that a hostile child cannot make the host allocate much.
inline constexpr std::size_t k_max_frame_body = 4 * 1024 * 1024;

class FrameParser {
 public:
  // The outcome of one feed() call.
  struct Step {
    std::size_t consumed = 0;               // bytes taken from the input
    std::optional<std::string_view> body;   // a complete body; valid until the next call
    std::optional<std::string> error;       // fatal framing error; the stream is dead
  };

  explicit FrameParser(std::string extension_id);

  // Consumes input until one body is complete, an error occurs or the input runs out.
  // Call again with the unconsumed rest. A body may point into `input` (no copy) or into
  // the parser's own buffer when it arrived in pieces.
  Step feed(std::string_view input);

  // The end of the stream: nullopt for a clean EOF between frames, else the error text
  // ("Unexpected EOF while reading response headers", "Read body error: early eof").
  std::optional<std::string> finish() const;

  // True when no byte of a next frame has been seen.
  bool between_frames() const;

 private:
  enum class State { headers, body, failed };

  std::optional<std::string> end_of_line();  // processes m_line; may switch to body
  std::optional<std::string> end_of_headers();

  std::string m_extension_id;
  State m_state = State::headers;
  std::string m_line;        // the header line being read (at most k_header_read_bound)
  bool m_saw_header = false;  // a header line of this frame has been read
  std::size_t m_header_bytes = 0;  // header bytes of this frame so far
  std::optional<std::uint64_t> m_content_length;
  std::size_t m_body_length = 0;
  std::string m_body;         // body bytes when the body arrived in pieces
};

}  // namespace exthost::wire
