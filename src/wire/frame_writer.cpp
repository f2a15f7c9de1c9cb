#include "wire/frame_writer.hpp"

namespace exthost::wire {

void FrameWriter::append(std::string& out, std::string_view body) {
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += "\r\n\r\n";
  out.append(body.data(), body.size());
}

std::string FrameWriter::frame(std::string_view body) {
  std::string out;
  out.reserve(body.size() + 32);
  append(out, body);
  return out;
}

}  // namespace exthost::wire
