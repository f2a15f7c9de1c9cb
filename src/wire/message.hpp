// wire/message.hpp — what a parsed frame is (SPEC §1.4). No I/O.
//
// classify() sorts a frame into one of four kinds exactly as the reference reader does:
// a response to one of our numeric ids, an inbound request (string or number id, echoed
// verbatim in the reply), a notification, or something to drop with a log line.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "exthost/result.hpp"

namespace exthost::wire {

// Every JSON-RPC `error` reply becomes an application error with this prefix; it proves
// the process is alive and answering, so the runtime never restarts on it.
inline constexpr std::string_view k_application_error_prefix = "Extension error: ";

// Whether a call error is an application error (the extension answered) rather than a
// transport failure: its cause says so, whatever its text.
bool is_application_error(const Error& error);

struct Response {
  std::uint64_t id = 0;
  Result<boost::json::value> outcome = boost::json::value();  // error: "Extension error: …"
};

struct InboundRequest {
  boost::json::value id;  // a string or a number, echoed verbatim
  std::string method;
  boost::json::value params;  // null when absent
};

struct Notification {
  std::string method;
  boost::json::value params;  // null when absent
};

// A frame that fits none of the above; `reason` is the log line.
struct Discarded {
  std::string reason;
};

using Message = std::variant<Response, InboundRequest, Notification, Discarded>;

// Sorts one parsed frame. Takes the value to move its parts out without copying.
Message classify(boost::json::value frame);

}  // namespace exthost::wire
