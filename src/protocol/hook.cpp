#include "protocol/hook.hpp"

#include <array>
#include <boost/json/object.hpp>

namespace exthost::protocol {
namespace {

constexpr std::array<std::pair<HookKind, std::string_view>, 7> k_kinds = {{
    {HookKind::before_tool_call, "before_tool_call"},
    {HookKind::after_tool_call, "after_tool_call"},
    {HookKind::before_message, "before_message"},
    {HookKind::on_message_complete, "on_message_complete"},
    {HookKind::on_compaction, "on_compaction"},
    {HookKind::on_session_start, "on_session_start"},
    {HookKind::on_session_end, "on_session_end"},
}};

template <class T>
boost::json::value or_null(const std::optional<T>& v) {
  if (!v) return nullptr;
  return boost::json::value(*v);
}

const boost::json::string* string_member(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v == nullptr ? nullptr : v->if_string();
}

}  // namespace

std::string_view to_string(HookKind k) {
  for (const auto& [kind, name] : k_kinds) {
    if (kind == k) return name;
  }
  return "before_tool_call";
}

std::optional<HookKind> parse_hook_kind(std::string_view s) {
  for (const auto& [kind, name] : k_kinds) {
    if (name == s) return kind;
  }
  return std::nullopt;
}

boost::json::value HookEvent::to_json() const {
  boost::json::object o;
  o["kind"] = std::string(to_string(kind));
  o["tool_name"] = or_null(tool_name);
  o["tool_runtime_name"] = or_null(tool_runtime_name);
  o["tool_input"] = tool_input ? *tool_input : boost::json::value(nullptr);
  o["tool_output"] = or_null(tool_output);
  o["message"] = or_null(message);
  o["session_id"] = or_null(session_id);
  o["transcript"] = transcript ? *transcript : boost::json::value(nullptr);
  o["data"] = data;
  o["cwd"] = or_null(cwd);
  return o;
}

std::optional<HookResult> decode_hook_result(const boost::json::value& v) {
  const auto* o = v.if_object();
  if (o == nullptr) return std::nullopt;
  const auto* action = string_member(*o, "action");
  if (action == nullptr) return std::nullopt;
  auto text = [o](std::string_view key) -> std::optional<std::string> {
    if (const auto* s = string_member(*o, key)) return std::string(*s);
    return std::nullopt;
  };
  if (*action == "continue") return hook_result::Continue{};
  if (*action == "block") {
    if (auto r = text("reason")) return hook_result::Block{*r};
  } else if (*action == "inject") {
    if (auto c = text("content")) return hook_result::Inject{*c};
  } else if (*action == "confirm") {
    if (auto m = text("message")) return hook_result::Confirm{*m};
  } else if (*action == "modify") {
    // A tool's input is an object: anything else is a malformed modify (it blocks).
    if (const auto* input = o->if_contains("input"); input != nullptr && input->is_object()) {
      return hook_result::Modify{*input};
    }
  } else if (*action == "replace") {
    if (auto out = text("output")) return hook_result::Replace{*out};
  } else if (*action == "context_phase") {
    if (auto p = text("phase")) return hook_result::ContextPhase{*p};
  }
  return std::nullopt;
}

HookResult hook_result_from_reply(const boost::json::value& v) {
  if (auto decoded = decode_hook_result(v)) return *decoded;
  if (const auto* o = v.if_object()) {
    if (const auto* action = string_member(*o, "action"); action != nullptr && *action == "modify") {
      // A malformed modify could let an unknown input through: fail safe.
      return hook_result::Block{"Extension returned malformed modify result"};
    }
  }
  return hook_result::Continue{};
}

std::string_view action_name(const HookResult& r) {
  static constexpr std::array<std::string_view, 7> names = {"continue", "block",   "inject",       "confirm",
                                                            "modify",   "replace", "context_phase"};
  return names[r.index()];
}

boost::json::value to_json(const HookResult& r) {
  boost::json::object o;
  o["action"] = std::string(action_name(r));
  if (const auto* b = std::get_if<hook_result::Block>(&r)) o["reason"] = b->reason;
  if (const auto* i = std::get_if<hook_result::Inject>(&r)) o["content"] = i->content;
  if (const auto* c = std::get_if<hook_result::Confirm>(&r)) o["message"] = c->message;
  if (const auto* m = std::get_if<hook_result::Modify>(&r)) o["input"] = m->input;
  if (const auto* p = std::get_if<hook_result::Replace>(&r)) o["output"] = p->output;
  if (const auto* p = std::get_if<hook_result::ContextPhase>(&r)) o["phase"] = p->phase;
  return o;
}

Result<HookEvent> parse_hook_event(const boost::json::value& v) {
  const auto* o = v.if_object();
  if (o == nullptr) return Error::usage("invalid hook event: expected an object at event");
  const auto* kind = o->if_contains("kind");
  if (kind == nullptr || !kind->is_string()) return Error::usage("invalid hook event: missing 'kind' at event.kind");
  auto parsed = parse_hook_kind(kind->get_string());
  if (!parsed) {
    return Error::usage("invalid hook event: unknown kind '" + std::string(kind->get_string()) + "' at event.kind");
  }
  HookEvent e;
  e.kind = *parsed;
  auto text = [&](const char* name, std::optional<std::string>& out) -> Result<void> {
    const auto* f = o->if_contains(name);
    if (f == nullptr || f->is_null()) return {};
    if (!f->is_string()) {
      return Error::usage(std::string("invalid hook event: expected a string at event.") + name);
    }
    out = std::string(f->get_string());
    return {};
  };
  for (auto [name, field] : {std::pair<const char*, std::optional<std::string>*>{"tool_name", &e.tool_name},
                             {"tool_runtime_name", &e.tool_runtime_name},
                             {"tool_output", &e.tool_output},
                             {"message", &e.message},
                             {"session_id", &e.session_id},
                             {"cwd", &e.cwd}}) {
    if (auto r = text(name, *field); !r) return std::move(r).error();
  }
  if (const auto* f = o->if_contains("tool_input"); f != nullptr && !f->is_null()) e.tool_input = *f;
  if (const auto* f = o->if_contains("transcript"); f != nullptr && !f->is_null()) {
    if (!f->is_array()) return Error::usage("invalid hook event: expected an array at event.transcript");
    e.transcript = *f;
  }
  if (const auto* f = o->if_contains("data")) e.data = *f;
  return e;
}

}  // namespace exthost::protocol
