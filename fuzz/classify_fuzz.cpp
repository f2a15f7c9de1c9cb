// libFuzzer target: a frame body through the depth-limited JSON parser, then message
// classification; encoding a reply to whatever id an inbound request carried.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "wire/json.hpp"
#include "wire/message.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  exthost::wire::JsonParser parser;
  auto v = parser.parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!v) return 0;
  auto message = exthost::wire::classify(std::move(v).value());
  if (auto* req = std::get_if<exthost::wire::InboundRequest>(&message)) {
    (void)exthost::wire::encode_result_reply(req->id, nullptr);
    (void)exthost::wire::encode_error_reply(req->id, -32601, "method not found: " + req->method);
  }
  return 0;
}
