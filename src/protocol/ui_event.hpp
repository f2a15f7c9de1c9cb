// protocol/ui_event.hpp — notifications for a user interface: overlay widgets (SPEC §3.4)
// and plugin-owned settings editors (SPEC §3.5). exthost renders neither; it validates them
// and hands them to subscribers as typed events.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::protocol {

struct WidgetSpan {
  std::string text;
  std::optional<std::string> fg;
  std::optional<std::string> bg;
};

struct WidgetUpsert {
  std::string id;
  std::vector<std::string> lines;
  std::string position = "top_right";
  std::optional<std::string> title;
  std::optional<std::uint64_t> ttl_secs;  // none: persistent
  std::optional<std::vector<std::vector<WidgetSpan>>> styled_lines;
};
struct WidgetDismiss {
  std::string id;
};

struct SettingsEditorRow {
  std::string label;
  std::optional<std::string> marker;
  bool selectable = true;
  std::optional<boost::json::value> data;
};
struct SettingsEditorRender {
  std::vector<SettingsEditorRow> rows;
  std::optional<std::uint64_t> cursor;
  std::optional<std::string> footer;
};
struct SettingsEditorCommit {
  boost::json::value value;
};
struct SettingsEditorClose {
  std::optional<std::string> reason;
};

using UiEvent = std::variant<WidgetUpsert, WidgetDismiss, SettingsEditorRender, SettingsEditorCommit, SettingsEditorClose>;

bool is_widget_method(std::string_view m);
bool is_settings_editor_method(std::string_view m);
// The reference's texts: "widget.upsert missing 'lines'", "not a widget method: …", …
Result<UiEvent> parse_widget_event(std::string_view method, const boost::json::value& params);
// "unknown settings.editor method: …", "invalid params for <method>: …".
Result<UiEvent> parse_settings_editor_event(std::string_view method, const boost::json::value& params);
// {"method": "widget.upsert", …} and so on.
boost::json::value to_json(const UiEvent& e);

}  // namespace exthost::protocol
