#include "protocol/ui_event.hpp"

#include <array>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace exthost::protocol {
namespace {

Error fail(std::string m) { return Error::extension(std::move(m)); }

constexpr std::array<std::string_view, 9> k_positions = {"top_left",     "top_center", "top_right",
                                                         "middle_left",  "center",     "middle_right",
                                                         "bottom_left",  "bottom_center", "bottom_right"};

std::optional<std::uint64_t> as_u64(const boost::json::value& v) {
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  return std::nullopt;
}

}  // namespace

bool is_widget_method(std::string_view m) { return m == "widget.upsert" || m == "widget.dismiss"; }

bool is_settings_editor_method(std::string_view m) {
  return m == "settings.editor.render" || m == "settings.editor.commit" || m == "settings.editor.close";
}

Result<UiEvent> parse_widget_event(std::string_view method, const boost::json::value& params) {
  const std::string m(method);
  if (!is_widget_method(method)) return fail("not a widget method: " + m);
  const auto* p = params.if_object();
  if (p == nullptr) return fail(m + " params must be a JSON object");
  const auto* id = p->if_contains("id");
  if (id == nullptr || !id->is_string()) return fail(m + " missing 'id'");
  if (id->get_string().empty()) return fail(m + " 'id' must be non-empty");
  if (method == "widget.dismiss") return UiEvent(WidgetDismiss{std::string(id->get_string())});

  WidgetUpsert w;
  w.id = std::string(id->get_string());
  const auto* lines = p->if_contains("lines");
  if (lines == nullptr) return fail("widget.upsert missing 'lines'");
  if (!lines->is_array()) return fail("widget.upsert 'lines' must be an array");
  for (std::size_t i = 0; i < lines->get_array().size(); ++i) {
    const auto& l = lines->get_array()[i];
    if (!l.is_string()) return fail("widget.upsert 'lines[" + std::to_string(i) + "]' must be a string");
    w.lines.emplace_back(l.get_string());
  }
  if (const auto* pos = p->if_contains("position"); pos != nullptr && !pos->is_null()) {
    if (!pos->is_string()) return fail("widget.upsert 'position' must be a string");
    const std::string s(pos->get_string());
    bool known = false;
    for (auto k : k_positions) known = known || k == s;
    if (!known) return fail("widget.upsert unknown position '" + s + "'");
    w.position = s;
  }
  if (const auto* title = p->if_contains("title"); title != nullptr && !title->is_null()) {
    if (!title->is_string()) return fail("widget.upsert 'title' must be a string");
    if (!title->get_string().empty()) w.title = std::string(title->get_string());
  }
  if (const auto* ttl = p->if_contains("ttl_secs"); ttl != nullptr && !ttl->is_null()) {
    auto n = as_u64(*ttl);
    if (!n) return fail("widget.upsert 'ttl_secs' must be a non-negative integer or null, got " + boost::json::serialize(*ttl));
    w.ttl_secs = n;
  }
  if (const auto* styled = p->if_contains("styled_lines"); styled != nullptr && !styled->is_null()) {
    if (!styled->is_array()) return fail("widget.upsert 'styled_lines' must be an array of arrays");
    std::vector<std::vector<WidgetSpan>> out;
    const auto& rows = styled->get_array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].is_array()) {
        return fail("widget.upsert 'styled_lines[" + std::to_string(i) + "]' must be an array of span objects");
      }
      std::vector<WidgetSpan> spans;
      const auto& row = rows[i].get_array();
      for (std::size_t j = 0; j < row.size(); ++j) {
        const std::string at = "widget.upsert 'styled_lines[" + std::to_string(i) + "][" + std::to_string(j) + "]";
        const auto* so = row[j].if_object();
        if (so == nullptr) return fail(at + "' must be an object");
        const auto* text = so->if_contains("text");
        if (text == nullptr || !text->is_string()) return fail(at + ".text' must be a string");
        WidgetSpan span{std::string(text->get_string()), std::nullopt, std::nullopt};
        if (const auto* fg = so->if_contains("fg"); fg != nullptr && fg->is_string()) span.fg = std::string(fg->get_string());
        if (const auto* bg = so->if_contains("bg"); bg != nullptr && bg->is_string()) span.bg = std::string(bg->get_string());
        spans.push_back(std::move(span));
      }
      out.push_back(std::move(spans));
    }
    w.styled_lines = std::move(out);
  }
  return UiEvent(std::move(w));
}

Result<UiEvent> parse_settings_editor_event(std::string_view method, const boost::json::value& params) {
  const std::string m(method);
  if (!is_settings_editor_method(method)) return fail("unknown settings.editor method: " + m);
  const std::string invalid = "invalid params for " + m + ": ";
  const auto* p = params.if_object();
  if (p == nullptr) return fail(invalid + "invalid type: expected a map");
  if (method == "settings.editor.commit") {
    const auto* v = p->if_contains("value");
    return UiEvent(SettingsEditorCommit{v ? *v : boost::json::value(nullptr)});
  }
  if (method == "settings.editor.close") {
    SettingsEditorClose c;
    if (const auto* r = p->if_contains("reason"); r != nullptr && !r->is_null()) {
      if (!r->is_string()) return fail(invalid + "invalid type for `reason`, expected a string");
      c.reason = std::string(r->get_string());
    }
    return UiEvent(std::move(c));
  }
  SettingsEditorRender render;
  const auto* rows = p->if_contains("rows");
  if (rows == nullptr) return fail(invalid + "missing field `rows`");
  if (!rows->is_array()) return fail(invalid + "invalid type for `rows`, expected a sequence");
  for (const auto& r : rows->get_array()) {
    const auto* ro = r.if_object();
    if (ro == nullptr) return fail(invalid + "invalid type: expected struct SettingsEditorRow");
    const auto* label = ro->if_contains("label");
    if (label == nullptr) return fail(invalid + "missing field `label`");
    if (!label->is_string()) return fail(invalid + "invalid type for `label`, expected a string");
    SettingsEditorRow row;
    row.label = std::string(label->get_string());
    if (const auto* mk = ro->if_contains("marker"); mk != nullptr && !mk->is_null()) {
      if (!mk->is_string()) return fail(invalid + "invalid type for `marker`, expected a string");
      row.marker = std::string(mk->get_string());
    }
    if (const auto* sel = ro->if_contains("selectable"); sel != nullptr && !sel->is_null()) {
      if (!sel->is_bool()) return fail(invalid + "invalid type for `selectable`, expected a boolean");
      row.selectable = sel->get_bool();
    }
    if (const auto* d = ro->if_contains("data"); d != nullptr && !d->is_null()) row.data = *d;
    render.rows.push_back(std::move(row));
  }
  if (const auto* c = p->if_contains("cursor"); c != nullptr && !c->is_null()) {
    auto n = as_u64(*c);
    if (!n) return fail(invalid + "invalid type for `cursor`, expected u64");
    render.cursor = n;
  }
  if (const auto* f = p->if_contains("footer"); f != nullptr && !f->is_null()) {
    if (!f->is_string()) return fail(invalid + "invalid type for `footer`, expected a string");
    render.footer = std::string(f->get_string());
  }
  return UiEvent(std::move(render));
}

boost::json::value to_json(const UiEvent& e) {
  boost::json::object o;
  if (const auto* w = std::get_if<WidgetUpsert>(&e)) {
    o["method"] = "widget.upsert";
    o["id"] = w->id;
    o["lines"] = boost::json::array(w->lines.begin(), w->lines.end());
    o["position"] = w->position;
    o["title"] = w->title ? boost::json::value(*w->title) : boost::json::value(nullptr);
    o["ttl_secs"] = w->ttl_secs ? boost::json::value(*w->ttl_secs) : boost::json::value(nullptr);
    if (w->styled_lines) {
      boost::json::array rows;
      for (const auto& row : *w->styled_lines) {
        boost::json::array spans;
        for (const auto& s : row) {
          boost::json::object so{{"text", s.text}};
          if (s.fg) so["fg"] = *s.fg;
          if (s.bg) so["bg"] = *s.bg;
          spans.push_back(std::move(so));
        }
        rows.push_back(std::move(spans));
      }
      o["styled_lines"] = std::move(rows);
    }
  } else if (const auto* d = std::get_if<WidgetDismiss>(&e)) {
    o["method"] = "widget.dismiss";
    o["id"] = d->id;
  } else if (const auto* r = std::get_if<SettingsEditorRender>(&e)) {
    o["method"] = "settings.editor.render";
    boost::json::array rows;
    for (const auto& row : r->rows) {
      boost::json::object ro{{"label", row.label}, {"selectable", row.selectable}};
      if (row.marker) ro["marker"] = *row.marker;
      if (row.data) ro["data"] = *row.data;
      rows.push_back(std::move(ro));
    }
    o["rows"] = std::move(rows);
    if (r->cursor) o["cursor"] = *r->cursor;
    if (r->footer) o["footer"] = *r->footer;
  } else if (const auto* c = std::get_if<SettingsEditorCommit>(&e)) {
    o["method"] = "settings.editor.commit";
    o["value"] = c->value;
  } else if (const auto* cl = std::get_if<SettingsEditorClose>(&e)) {
    o["method"] = "settings.editor.close";
    if (cl->reason) o["reason"] = *cl->reason;
  }
  return o;
}

}  // namespace exthost::protocol
