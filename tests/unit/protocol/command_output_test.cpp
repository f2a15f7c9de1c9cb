// Ported from the reference's commands.rs and tasks.rs tests (SPEC §8.4, §8.5).
#include "protocol/command_output.hpp"
#include "protocol/task_event.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace exthost::protocol {
namespace {

Result<CommandOutput> parse(const char* text) { return parse_command_output(boost::json::parse(text)); }
std::string err(const char* text) {
  auto r = parse(text);
  return r.ok() ? "(ok)" : r.error().message;
}

TEST(CommandOutput, ParsesATextEventNestedAndFlat) {
  for (const char* shape : {R"({"request_id":"r1","event":{"kind":"text","content":"hello"}})",
                            R"({"request_id":"r1","kind":"text","content":"hello"})"}) {
    auto r = parse(shape);
    ASSERT_TRUE(r.ok()) << shape;
    EXPECT_EQ(r->request_id, "r1");
    EXPECT_EQ(std::get<command_output::Text>(r->event).content, "hello");
  }
}

TEST(CommandOutput, ParsesSystemErrorAndDone) {
  EXPECT_EQ(std::get<command_output::System>(parse(R"({"request_id":"r","kind":"system","content":""})")->event).content, "");
  EXPECT_EQ(std::get<command_output::Error>(parse(R"({"request_id":"r","kind":"error","content":"bad"})")->event).content, "bad");
  EXPECT_TRUE(std::holds_alternative<command_output::Done>(parse(R"({"request_id":"r","kind":"done"})")->event));
}

TEST(CommandOutput, ParsesATable) {
  auto r = parse(R"({"request_id":"r","kind":"table","headers":["a","b"],"rows":[["1","2"],["3","4"]]})");
  ASSERT_TRUE(r.ok());
  const auto& t = std::get<command_output::Table>(r->event);
  EXPECT_EQ(t.headers, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1][0], "3");
}

TEST(CommandOutput, RejectsWithTheReferenceTexts) {
  EXPECT_EQ(err("[]"), "command.output params must be a JSON object");
  EXPECT_EQ(err(R"({"kind":"text","content":"x"})"), "command.output missing request_id");
  EXPECT_EQ(err(R"({"request_id":"","kind":"text","content":"x"})"), "command.output request_id must be non-empty");
  EXPECT_EQ(err(R"({"request_id":"r","event":5})"), "command.output event must be a JSON object");
  EXPECT_EQ(err(R"({"request_id":"r","event":{}})"), "command.output event missing 'kind'");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"wat"})"), "unknown command.output event kind: wat");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"text"})"), "command.output text event missing 'content'");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"system"})"), "command.output system event missing 'content'");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"error"})"), "command.output error event missing 'content'");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"error","content":""})"), "command.output error content must be non-empty");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"table","rows":[]})"), "command.output table missing 'headers' array");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"table","headers":[1],"rows":[]})"), "command.output table header must be string");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"table","headers":[]})"), "command.output table missing 'rows' array");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"table","headers":[],"rows":[1]})"), "command.output table row must be array");
  EXPECT_EQ(err(R"({"request_id":"r","kind":"table","headers":[],"rows":[[1]]})"), "command.output table cell must be string");
}

Result<TaskEvent> task(const char* method, const char* params) { return parse_task_event(method, boost::json::parse(params)); }

TEST(TaskEvent, ParsesTaskStartWithKindAndDefaultsToGeneric) {
  auto s = task("task.start", R"({"id":"dl","label":"Downloading","kind":"download"})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(std::get<task_event::Start>(*s).kind, TaskKind::download);
  EXPECT_EQ(std::get<task_event::Start>(*task("task.start", R"({"id":"a","label":"L"})")).kind, TaskKind::generic);
  EXPECT_EQ(std::get<task_event::Start>(*task("task.start", R"({"id":"a","label":"L","kind":"other"})")).kind, TaskKind::generic);
  EXPECT_EQ(std::get<task_event::Start>(*task("task.start", R"({"id":"a","label":"L","kind":"rebuild"})")).kind, TaskKind::rebuild);
}

TEST(TaskEvent, ParsesAPartialUpdateALogAndDone) {
  const auto u = std::get<task_event::Update>(*task("task.update", R"({"id":"dl","current":50,"total":"x"})"));
  EXPECT_EQ(u.current, std::optional<std::uint64_t>(50));
  EXPECT_FALSE(u.total) << "non-numbers are silently absent";
  EXPECT_FALSE(u.message);
  EXPECT_EQ(std::get<task_event::Log>(*task("task.log", R"({"id":"dl","line":"fetched"})")).line, "fetched");
  EXPECT_FALSE(std::get<task_event::Done>(*task("task.done", R"({"id":"dl"})")).error);
  EXPECT_FALSE(std::get<task_event::Done>(*task("task.done", R"({"id":"dl","error":""})")).error);
  EXPECT_EQ(std::get<task_event::Done>(*task("task.done", R"({"id":"dl","error":"checksum mismatch"})")).error,
            std::optional<std::string>("checksum mismatch"));
}

TEST(TaskEvent, RejectsWithTheReferenceTexts) {
  EXPECT_EQ(task("task.start", R"({"label":"x"})").error().message, "task.start missing 'id'");
  EXPECT_EQ(task("task.log", R"({"id":""})").error().message, "task.log 'id' must be non-empty");
  EXPECT_EQ(task("task.start", R"({"id":"a","label":"L","kind":"weird"})").error().message, "task.start unknown kind 'weird'");
  EXPECT_EQ(task("task.start", R"({"id":"a"})").error().message, "task.start missing 'label'");
  EXPECT_EQ(task("task.log", R"({"id":"a"})").error().message, "task.log missing 'line'");
  EXPECT_EQ(task("task.done", R"({"id":"a","error":5})").error().message, "task.done 'error' must be string or null, got 5");
  EXPECT_EQ(task("task.update", "[]").error().message, "task.update params must be a JSON object");
  EXPECT_EQ(task("task.cancel", "{}").error().message, "not a task method: task.cancel");
}

TEST(TaskEvent, IsTaskMethodWorks) {
  for (const char* m : {"task.start", "task.update", "task.log", "task.done"}) EXPECT_TRUE(is_task_method(m));
  for (const char* m : {"task", "task.cancel", "command.output", ""}) EXPECT_FALSE(is_task_method(m));
}

}  // namespace
}  // namespace exthost::protocol
