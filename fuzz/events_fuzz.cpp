// libFuzzer target: every notification parser (command output, task events, provider
// stream events, widgets, settings editor) on arbitrary params, and their serializers on
// whatever they accept.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/command_output.hpp"
#include "protocol/provider.hpp"
#include "protocol/task_event.hpp"
#include "protocol/ui_event.hpp"
#include "wire/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace exthost::protocol;
  exthost::wire::JsonParser parser;
  auto v = parser.parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!v) return 0;
  const auto& params = v.value();
  if (auto out = parse_command_output(params)) (void)to_json(out->event);
  for (const char* m : {"task.start", "task.update", "task.log", "task.done", "task.other"}) {
    if (auto t = parse_task_event(m, params)) (void)to_json(*t);
  }
  if (auto e = parse_provider_stream_event(params)) (void)to_json(*e);
  for (const char* m : {"widget.upsert", "widget.dismiss", "widget.other"}) {
    if (auto w = parse_widget_event(m, params)) (void)to_json(*w);
  }
  for (const char* m : {"settings.editor.render", "settings.editor.commit", "settings.editor.close", "x"}) {
    if (auto s = parse_settings_editor_event(m, params)) (void)to_json(*s);
  }
  return 0;
}
