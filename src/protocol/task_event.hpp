// protocol/task_event.hpp — `task.start|update|log|done` notifications (SPEC §3.2, §5.10).
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "exthost/result.hpp"

namespace exthost::protocol {

enum class TaskKind { download, rebuild, generic };
std::string_view to_string(TaskKind k);

namespace task_event {
struct Start { std::string id; std::string label; TaskKind kind = TaskKind::generic; };
struct Update {
  std::string id;
  std::optional<std::uint64_t> current;
  std::optional<std::uint64_t> total;
  std::optional<std::string> message;
};
struct Log { std::string id; std::string line; };
struct Done { std::string id; std::optional<std::string> error; };
}  // namespace task_event

using TaskEvent = std::variant<task_event::Start, task_event::Update, task_event::Log, task_event::Done>;

// True exactly for the four task methods.
bool is_task_method(std::string_view method);
// The reference's parser and texts ("task.start missing 'label'", "not a task method: …").
Result<TaskEvent> parse_task_event(std::string_view method, const boost::json::value& params);
const std::string& task_id(const TaskEvent& e);
// {"method": "task.start", "id", …}: the event as it serializes for callers.
boost::json::value to_json(const TaskEvent& e);

}  // namespace exthost::protocol
