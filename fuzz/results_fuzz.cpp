// libFuzzer target: every result parser (initialize, hook results and events, plugin info,
// sidecar arguments, provider results and tool uses) on arbitrary JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/hook.hpp"
#include "protocol/initialize.hpp"
#include "protocol/plugin_info.hpp"
#include "protocol/provider.hpp"
#include "wire/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace exthost::protocol;
  exthost::wire::JsonParser parser;
  auto v = parser.parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!v) return 0;
  const auto& value = v.value();
  (void)parse_initialize_result("fuzz", value);
  if (auto r = decode_hook_result(value)) (void)to_json(*r);
  (void)to_json(hook_result_from_reply(value));
  if (auto e = parse_hook_event(value)) (void)e->to_json();
  if (auto info = parse_plugin_info("fuzz", value)) (void)to_json(*info);
  (void)parse_sidecar_spawn_args("fuzz", value);
  if (auto r = parse_provider_result("fuzz", "provider.complete", value)) (void)to_json(*r);
  if (value.is_array()) {
    (void)extract_provider_tool_uses(value.get_array());
    (void)parse_provider_specs("fuzz", value.get_array());
  }
  return 0;
}
