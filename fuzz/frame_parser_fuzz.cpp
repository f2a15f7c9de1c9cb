// libFuzzer target: FrameParser fed arbitrary bytes in arbitrary pieces. The first byte
// picks the piece size; the invariants are the parser's promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wire/frame_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  exthost::wire::FrameParser parser("fuzz");
  bool failed = false;
  while (!input.empty()) {
    std::string_view chunk = input.substr(0, piece);
    input.remove_prefix(chunk.size());
    while (!chunk.empty()) {
      auto step = parser.feed(chunk);
      if (step.consumed > chunk.size()) std::abort();
      if (step.body && step.body->size() > exthost::wire::k_max_frame_body) std::abort();
      if (step.error) {
        failed = true;
        break;
      }
      if (step.consumed == 0 && !step.body) std::abort();  // no progress: a hang
      chunk.remove_prefix(step.consumed);
    }
    if (failed) break;
  }
  if (!failed) (void)parser.finish();
  return 0;
}
