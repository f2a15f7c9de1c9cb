#include "protocol/ui_event.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace exthost::protocol {
namespace {

std::string werr(const char* method, const char* params) {
  auto r = parse_widget_event(method, boost::json::parse(params));
  return r.ok() ? "(ok)" : r.error().message;
}

TEST(WidgetEvent, ParsesAnUpsertWithDefaults) {
  auto r = parse_widget_event("widget.upsert", boost::json::parse(R"({"id":"clock","lines":["12:00"],"session_id":"s"})"));
  ASSERT_TRUE(r.ok());
  const auto& w = std::get<WidgetUpsert>(*r);
  EXPECT_EQ(w.position, "top_right");
  EXPECT_FALSE(w.title);
  EXPECT_FALSE(w.ttl_secs);
  auto full = parse_widget_event("widget.upsert", boost::json::parse(
      R"({"id":"c","lines":[],"position":"center","title":"","ttl_secs":30,"styled_lines":[[{"text":"12","fg":"#22d3ee","bg":5}]]})"));
  ASSERT_TRUE(full.ok());
  const auto& f = std::get<WidgetUpsert>(*full);
  EXPECT_FALSE(f.title) << "an empty title is none";
  EXPECT_EQ(f.ttl_secs, std::optional<std::uint64_t>(30));
  EXPECT_EQ(f.styled_lines->at(0).at(0).fg, std::optional<std::string>("#22d3ee"));
  EXPECT_FALSE(f.styled_lines->at(0).at(0).bg) << "non-string colours are ignored";
  EXPECT_TRUE(std::holds_alternative<WidgetDismiss>(*parse_widget_event("widget.dismiss", boost::json::parse(R"({"id":"c"})"))));
}

TEST(WidgetEvent, RejectsWithTheReferenceTexts) {
  EXPECT_EQ(werr("widget.upsert", "[]"), "widget.upsert params must be a JSON object");
  EXPECT_EQ(werr("widget.dismiss", "{}"), "widget.dismiss missing 'id'");
  EXPECT_EQ(werr("widget.upsert", R"({"id":""})"), "widget.upsert 'id' must be non-empty");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c"})"), "widget.upsert missing 'lines'");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":"x"})"), "widget.upsert 'lines' must be an array");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":["a",1]})"), "widget.upsert 'lines[1]' must be a string");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"position":1})"), "widget.upsert 'position' must be a string");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"position":"left"})"), "widget.upsert unknown position 'left'");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"title":1})"), "widget.upsert 'title' must be a string");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"ttl_secs":-1})"),
            "widget.upsert 'ttl_secs' must be a non-negative integer or null, got -1");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"styled_lines":1})"),
            "widget.upsert 'styled_lines' must be an array of arrays");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"styled_lines":[1]})"),
            "widget.upsert 'styled_lines[0]' must be an array of span objects");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"styled_lines":[[1]]})"),
            "widget.upsert 'styled_lines[0][0]' must be an object");
  EXPECT_EQ(werr("widget.upsert", R"({"id":"c","lines":[],"styled_lines":[[{}]]})"),
            "widget.upsert 'styled_lines[0][0].text' must be a string");
  EXPECT_EQ(werr("widget.move", "{}"), "not a widget method: widget.move");
}

TEST(SettingsEditorEvent, ParsesRenderCommitAndClose) {
  auto r = parse_settings_editor_event("settings.editor.render", boost::json::parse(
      R"({"rows":[{"label":"tiny.en","marker":"✓","data":{"id":"tiny"}},{"label":"base","selectable":false}],"cursor":0,"footer":"Enter"})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& render = std::get<SettingsEditorRender>(*r);
  ASSERT_EQ(render.rows.size(), 2u);
  EXPECT_TRUE(render.rows[0].selectable);
  EXPECT_FALSE(render.rows[1].selectable);
  EXPECT_EQ(render.cursor, std::optional<std::uint64_t>(0));
  auto commit = parse_settings_editor_event("settings.editor.commit", boost::json::parse(R"({"value":"model:tiny.en"})"));
  EXPECT_EQ(std::get<SettingsEditorCommit>(*commit).value.as_string(), "model:tiny.en");
  auto close = parse_settings_editor_event("settings.editor.close", boost::json::parse(R"({"reason":"done"})"));
  EXPECT_EQ(std::get<SettingsEditorClose>(*close).reason, std::optional<std::string>("done"));
  EXPECT_EQ(parse_settings_editor_event("settings.editor.open", boost::json::parse("{}")).error().message,
            "unknown settings.editor method: settings.editor.open");
  EXPECT_EQ(parse_settings_editor_event("settings.editor.render", boost::json::parse("{}")).error().message,
            "invalid params for settings.editor.render: missing field `rows`");
}

}  // namespace
}  // namespace exthost::protocol

#include "protocol/plugin_info.hpp"

namespace exthost::protocol {
namespace {

TEST(SidecarSpawnArgs, AcceptsAnEmptyObjectAndRejectsAnInvalidPayload) {
  auto empty = parse_sidecar_spawn_args("s", boost::json::parse("{}"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->args.empty());
  EXPECT_FALSE(empty->language);
  auto lang = parse_sidecar_spawn_args("s", boost::json::parse(R"({"language":"en"})"));
  EXPECT_EQ(lang->language, std::optional<std::string>("en"));
  auto bad = parse_sidecar_spawn_args("s", boost::json::parse(R"({"args":"not-a-list"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("Invalid sidecar.spawn_args response from extension 's': ", 0), 0u);
}

TEST(PluginInfo, DefaultsAndRequiredFields) {
  auto info = parse_plugin_info("p", boost::json::parse(R"({"models":[{"id":"m"}]})"));
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->build);
  EXPECT_FALSE(info->models[0].installed);
  EXPECT_FALSE(info->models[0].display_name);
  EXPECT_EQ(parse_plugin_info("p", boost::json::parse(R"({"build":{}})")).error().message,
            "Invalid info.get response from extension 'p': missing field `backend`");
}

}  // namespace
}  // namespace exthost::protocol
