// protocol/command_output.hpp — `command.output` notifications (SPEC §3.1, §5.10).
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <variant>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::protocol {

namespace command_output {
struct Text { std::string content; };
struct System { std::string content; };
struct Error { std::string content; };  // never empty
struct Table {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
};
struct Done {};
}  // namespace command_output

using CommandOutputEvent = std::variant<command_output::Text, command_output::System, command_output::Error,
                                        command_output::Table, command_output::Done>;

struct CommandOutput {
  std::string request_id;
  CommandOutputEvent event;
};

// Accepts the nested ({"request_id", "event": {...}}) and the flat ({"request_id", "kind",
// ...}) shapes, with the reference's error texts ("command.output missing request_id", …).
Result<CommandOutput> parse_command_output(const boost::json::value& params);

// {"kind": "text", "content": …} and so on: the event as it serializes.
boost::json::value to_json(const CommandOutputEvent& e);

}  // namespace exthost::protocol
