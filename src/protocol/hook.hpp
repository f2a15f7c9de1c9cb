// protocol/hook.hpp — hook events and results on the wire (SPEC §5.1.1–§5.1.3).
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "exthost/result.hpp"

namespace exthost::protocol {

enum class HookKind {
  before_tool_call,
  after_tool_call,
  before_message,
  on_message_complete,
  on_compaction,
  on_session_start,
  on_session_end,
};

std::string_view to_string(HookKind k);
// Exact wire names only ("before_tool_call"); anything else is nullopt.
std::optional<HookKind> parse_hook_kind(std::string_view s);

// The params of hook.handle. Serialized with every field present, null when absent.
struct HookEvent {
  HookKind kind = HookKind::before_tool_call;
  std::optional<std::string> tool_name;          // API-safe name, tool hooks only
  std::optional<std::string> tool_runtime_name;  // "plugin:tool" when known
  std::optional<boost::json::value> tool_input;
  std::optional<std::string> tool_output;        // after_tool_call: bounded preview
  std::optional<std::string> message;
  std::optional<std::string> session_id;
  std::optional<boost::json::value> transcript;  // on_session_end only
  boost::json::value data;                       // kind-specific metadata, null by default
  std::optional<std::string> cwd;

  boost::json::value to_json() const;
};

// Decodes an event written by an embedder ({"kind": "before_tool_call", "tool_name": …}):
// `kind` is required, every other member optional. Errors name the member:
// "invalid hook event: unknown kind 'x' at event.kind", "… expected a string at event.message".
Result<HookEvent> parse_hook_event(const boost::json::value& v);

namespace hook_result {
struct Continue {};
struct Block { std::string reason; };
struct Inject { std::string content; };
struct Confirm { std::string message; };
struct Modify { boost::json::value input; };
struct Replace { std::string output; };
struct ContextPhase { std::string phase; };
}  // namespace hook_result

using HookResult = std::variant<hook_result::Continue, hook_result::Block, hook_result::Inject, hook_result::Confirm,
                                hook_result::Modify, hook_result::Replace, hook_result::ContextPhase>;

// Strict decoding of a hook.handle reply (tagged by "action"); nullopt when it does not
// decode: unknown action, a missing required member, not an object.
std::optional<HookResult> decode_hook_result(const boost::json::value& v);

// The handler's decision from a reply (SPEC §2.2): the decoded result; a malformed "modify"
// blocks with "Extension returned malformed modify result"; anything else malformed continues.
HookResult hook_result_from_reply(const boost::json::value& v);

boost::json::value to_json(const HookResult& r);
std::string_view action_name(const HookResult& r);

}  // namespace exthost::protocol
