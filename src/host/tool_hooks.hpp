// host/tool_hooks.hpp — what the tool hooks' answers do to a tool call (SPEC §6.13).
//
// Plain functions, no I/O: the manager emits the events and applies these decisions.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "exthost/result.hpp"
#include "protocol/hook.hpp"

namespace exthost::host {

// How much of a tool's output after_tool_call hooks see (reference: 256 KiB, §9 Q7).
inline constexpr std::size_t k_max_hook_output = 256 * 1024;
// The most a replace answer may substitute for a tool's output (reference: 1 MiB).
inline constexpr std::size_t k_max_replace_output = 1024 * 1024;

// The output as after_tool_call hooks see it: whole up to k_max_hook_output, else the
// longest UTF-8-safe prefix followed by "…[truncated, <n> total bytes]".
std::string hook_output_preview(std::string_view output);

// The text of a tool result: a string as is, a "content" string member, else compact JSON.
std::string tool_output_text(const boost::json::value& result);

// before_tool_call's verdict: blocked with a reason, or go ahead with `input` (the
// original, or a modify answer's replacement). A confirm answer blocks unless
// `auto_approve` — a host without an interactive prompt fails closed.
struct BeforeToolDecision {
  std::optional<std::string> blocked;
  boost::json::value input;
};
BeforeToolDecision resolve_before_tool_call(const protocol::HookResult& answer, boost::json::value original_input,
                                            bool auto_approve);

// The error of a tool call that a before_tool_call hook blocked: "Tool '<runtime name>'
// blocked by hook: <reason> (extension '<id>')", the suffix left out when the reason already
// names the extension (a fail-closed block) or none is known; kind extension, cause
// `blocked`, extension_id the hook's extension.
Error blocked_tool_call(const std::string& runtime_name, const std::string& reason, const std::string& extension_id,
                        bool reason_names_extension);

// after_tool_call's verdict: the output to keep (a replace clamped to k_max_replace_output
// at a character boundary), nullopt to keep the original.
std::optional<std::string> resolve_after_tool_call(const protocol::HookResult& answer);

}  // namespace exthost::host
