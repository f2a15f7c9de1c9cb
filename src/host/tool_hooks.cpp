#include "host/tool_hooks.hpp"

#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace hr = protocol::hook_result;

std::string hook_output_preview(std::string_view output) {
  if (output.size() <= k_max_hook_output) return std::string(output);
  std::string out(util::utf8_prefix(output, k_max_hook_output));
  out += "\xE2\x80\xA6[truncated, " + std::to_string(output.size()) + " total bytes]";
  return out;
}

std::string tool_output_text(const boost::json::value& result) {
  if (const auto* s = result.if_string()) return std::string(*s);
  if (const auto* o = result.if_object()) {
    if (const auto* c = o->if_contains("content"); c != nullptr && c->is_string()) return std::string(c->get_string());
  }
  return wire::to_json(result);
}

BeforeToolDecision resolve_before_tool_call(const protocol::HookResult& answer, boost::json::value original_input,
                                            bool auto_approve) {
  if (const auto* block = std::get_if<hr::Block>(&answer)) return {block->reason, std::move(original_input)};
  if (const auto* modify = std::get_if<hr::Modify>(&answer)) return {std::nullopt, modify->input};
  if (const auto* confirm = std::get_if<hr::Confirm>(&answer); confirm != nullptr && !auto_approve) {
    return {"Tool call requires confirmation but no interactive prompt is available: " + confirm->message,
            std::move(original_input)};
  }
  return {std::nullopt, std::move(original_input)};
}

Error blocked_tool_call(const std::string& runtime_name, const std::string& reason, const std::string& extension_id,
                        bool reason_names_extension) {
  std::string text = "Tool '" + runtime_name + "' blocked by hook: " + reason;
  if (!reason_names_extension && !extension_id.empty()) text += " (extension '" + extension_id + "')";
  Error e = Error::extension(std::move(text)).because(ErrorCause::blocked);
  e.extension_id = extension_id;
  return e;
}

std::optional<std::string> resolve_after_tool_call(const protocol::HookResult& answer) {
  const auto* replace = std::get_if<hr::Replace>(&answer);
  if (replace == nullptr) return std::nullopt;
  if (replace->output.size() > k_max_replace_output) {
    util::log().warn("Extension Replace output exceeds cap — clamping ({} bytes, cap {})", replace->output.size(),
                     k_max_replace_output);
    return std::string(util::utf8_prefix(replace->output, k_max_replace_output));
  }
  return replace->output;
}

}  // namespace exthost::host
