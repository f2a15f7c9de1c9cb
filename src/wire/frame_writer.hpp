// wire/frame_writer.hpp — the bytes of one outgoing frame. No I/O.
//
// Exactly "Content-Length: N\r\n\r\n" followed by the N bytes of the body: no other header,
// no trailing newline (SPEC §1.2). Writing the bytes, in order and never interleaved, is the
// connection's writer's job.
#pragma once

#include <string>
#include <string_view>

namespace exthost::wire {

class FrameWriter {
 public:
  // Appends one frame to `out`, so that several can be batched into one write.
  static void append(std::string& out, std::string_view body);
  // One frame as its own string.
  static std::string frame(std::string_view body);
};

}  // namespace exthost::wire
