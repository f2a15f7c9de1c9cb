// protocol/provider.hpp — model providers an extension offers (SPEC §2.4–§2.5, §3.3, §5.6.3,
// §5.11): their specs, their results, their stream events and the tool uses they request.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::protocol {

struct ProviderModelSpec {
  std::string id;
  std::optional<std::string> display_name;
  boost::json::value capabilities;  // e.g. {"tool_use": true, "streaming": true}; null when absent
  std::optional<std::uint64_t> context_window;
};

struct ProviderSpec {
  std::string id;
  std::string display_name;
  std::string description;
  std::vector<ProviderModelSpec> models;
  std::optional<boost::json::value> config_schema;
};

// Decodes `capabilities.providers` (serde-style errors) and validates every provider with
// the reference's texts ("Extension '<id>' registered provider … must declare at least one
// model", …).
Result<std::vector<ProviderSpec>> parse_provider_specs(std::string_view extension_id, const boost::json::array& providers);

// The result of provider.complete / provider.stream: {content: [blocks], stop_reason?, usage?}.
struct ProviderCompleteResult {
  boost::json::array content;
  std::optional<std::string> stop_reason;
  std::optional<boost::json::value> usage;
};
// `what` names the method in the error: "Invalid provider.complete response from extension '<id>': …".
Result<ProviderCompleteResult> parse_provider_result(std::string_view extension_id, std::string_view method,
                                                     const boost::json::value& v);
boost::json::value to_json(const ProviderCompleteResult& r);

namespace stream_event {
struct TextDelta { std::string text; };
struct ThinkingDelta { std::string text; };
struct ToolUse { std::string id; std::string name; boost::json::value input; };
struct Usage { boost::json::value usage; };
struct Error { std::string message; };  // non-fatal: the caller decides
struct Done {};
}  // namespace stream_event

using ProviderStreamEvent = std::variant<stream_event::TextDelta, stream_event::ThinkingDelta, stream_event::ToolUse,
                                         stream_event::Usage, stream_event::Error, stream_event::Done>;

// One provider.stream.event's params: {"event": {...}} or the flat event itself.
Result<ProviderStreamEvent> parse_provider_stream_event(const boost::json::value& params);
// {"type": "text", "text": …} and so on.
boost::json::value to_json(const ProviderStreamEvent& e);

struct ProviderToolUse {
  std::string id;
  std::string name;
  boost::json::value input;  // an object
};

// The tool_use blocks of a provider's content, validated ("provider tool_use missing id", …).
Result<std::vector<ProviderToolUse>> extract_provider_tool_uses(const boost::json::array& content);

}  // namespace exthost::protocol
