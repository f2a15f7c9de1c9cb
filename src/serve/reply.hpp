// serve/reply.hpp — the frames the server writes: replies and stream notifications, each
// carrying its request's id as the raw text that came in (serve/request_id.hpp), and none
// with a body over the framing cap, which the client's parser would refuse.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "wire/frame_parser.hpp"

namespace exthost::server {

// The most body bytes of one frame the server writes: the framing's own cap.
inline constexpr std::size_t k_max_output_body = wire::k_max_frame_body;
// An error message longer than this is cut (at a character boundary) and marked
// "[cut: N more bytes of M]": an error echoes client text, such as an unknown method's
// name, or an extension's own message, which must not make the error oversized.
inline constexpr std::size_t k_max_error_message = 64 * 1024;

// The id text of a reply to a request whose id could not be read.
inline constexpr std::string_view k_null_id = "null";

// The frame of a result reply; nullopt when its body would exceed k_max_output_body, whose
// size is then stored in `body_size`. `result_json` is a JSON text, written as it is; with
// a `key`, the result is {"<key>": result_json} (built in the frame, without a copy).
std::optional<std::string> result_frame(std::string_view raw_id, std::string_view result_json, std::size_t& body_size,
                                        std::string_view key = {});

// The frame of a provider.stream.event notification for request `raw_id`; nullopt when its
// body would exceed k_max_output_body (its size in `body_size`).
std::optional<std::string> stream_event_frame(std::string_view raw_id, std::string_view event_json,
                                              std::size_t& body_size);

// The frame of an error reply, always within the cap: the message is cut to
// k_max_error_message, and an id or data too long to fit are left out (the id as null).
// `smaller_data`, when given, is tried before leaving the data out: the same data without
// its large parts (an extension's error data, a command's output).
std::string error_frame(std::string_view raw_id, int code, std::string_view message,
                        const boost::json::value* data = nullptr, const boost::json::value* smaller_data = nullptr);

}  // namespace exthost::server
