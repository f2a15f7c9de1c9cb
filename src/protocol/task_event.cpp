#include "protocol/task_event.hpp"

#include <boost/json/object.hpp>

#include <boost/json/serialize.hpp>

namespace exthost::protocol {
namespace {

Error fail(std::string m) { return Error::extension(std::move(m)); }

std::optional<std::uint64_t> as_u64(const boost::json::value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
  return std::nullopt;
}

}  // namespace

std::string_view to_string(TaskKind k) {
  switch (k) {
    case TaskKind::download: return "download";
    case TaskKind::rebuild: return "rebuild";
    case TaskKind::generic: return "generic";
  }
  return "generic";
}

bool is_task_method(std::string_view m) {
  return m == "task.start" || m == "task.update" || m == "task.log" || m == "task.done";
}

Result<TaskEvent> parse_task_event(std::string_view method, const boost::json::value& params) {
  const std::string m(method);
  if (!is_task_method(method)) return fail("not a task method: " + m);
  const auto* p = params.if_object();
  if (p == nullptr) return fail(m + " params must be a JSON object");
  const auto* id_value = p->if_contains("id");
  if (id_value == nullptr || !id_value->is_string()) return fail(m + " missing 'id'");
  std::string id(id_value->get_string());
  if (id.empty()) return fail(m + " 'id' must be non-empty");
  auto text = [p](std::string_view key) -> std::optional<std::string> {
    const auto* v = p->if_contains(key);
    if (v != nullptr && v->is_string()) return std::string(v->get_string());
    return std::nullopt;
  };
  if (method == "task.start") {
    auto label = text("label");
    if (!label) return fail("task.start missing 'label'");
    TaskKind kind = TaskKind::generic;
    if (const auto* k = p->if_contains("kind")) {
      const auto* ks = k->if_string();
      if (ks != nullptr && *ks == "download") {
        kind = TaskKind::download;
      } else if (ks != nullptr && *ks == "rebuild") {
        kind = TaskKind::rebuild;
      } else if (ks != nullptr && (*ks == "generic" || *ks == "other")) {
        kind = TaskKind::generic;
      } else {
        return fail("task.start unknown kind '" + (ks ? std::string(*ks) : boost::json::serialize(*k)) + "'");
      }
    }
    return TaskEvent(task_event::Start{std::move(id), std::move(*label), kind});
  }
  if (method == "task.update") {
    return TaskEvent(task_event::Update{std::move(id), as_u64(p->if_contains("current")), as_u64(p->if_contains("total")),
                                       text("message")});
  }
  if (method == "task.log") {
    auto line = text("line");
    if (!line) return fail("task.log missing 'line'");
    return TaskEvent(task_event::Log{std::move(id), std::move(*line)});
  }
  std::optional<std::string> error;
  if (const auto* e = p->if_contains("error"); e != nullptr && !e->is_null()) {
    if (!e->is_string()) return fail("task.done 'error' must be string or null, got " + boost::json::serialize(*e));
    if (!e->get_string().empty()) error = std::string(e->get_string());
  }
  return TaskEvent(task_event::Done{std::move(id), std::move(error)});
}

const std::string& task_id(const TaskEvent& e) {
  return std::visit([](const auto& v) -> const std::string& { return v.id; }, e);
}

boost::json::value to_json(const TaskEvent& e) {
  boost::json::object o;
  if (const auto* s = std::get_if<task_event::Start>(&e)) {
    o["method"] = "task.start";
    o["id"] = s->id;
    o["label"] = s->label;
    o["kind"] = std::string(to_string(s->kind));
  } else if (const auto* u = std::get_if<task_event::Update>(&e)) {
    o["method"] = "task.update";
    o["id"] = u->id;
    if (u->current) o["current"] = *u->current;
    if (u->total) o["total"] = *u->total;
    if (u->message) o["message"] = *u->message;
  } else if (const auto* l = std::get_if<task_event::Log>(&e)) {
    o["method"] = "task.log";
    o["id"] = l->id;
    o["line"] = l->line;
  } else if (const auto* d = std::get_if<task_event::Done>(&e)) {
    o["method"] = "task.done";
    o["id"] = d->id;
    if (d->error) o["error"] = *d->error;
  }
  return o;
}

}  // namespace exthost::protocol
