// serve/request_id.hpp — a request's id as the bytes that carried it.
//
// A reply must carry its request's id unchanged, but a parsed number has lost its spelling:
// 1.0 becomes 1, 1e400 does not fit a double, an integer past 64 bits is rounded. So the
// server keeps the id member's own text from the frame and writes that back verbatim.
#pragma once

#include <optional>
#include <string_view>

namespace exthost::server {

// The text of the top-level member `key` of `object_text`, without the whitespace around
// it; the last one when the key repeats (as the JSON parser keeps the last). `object_text`
// must be a JSON text already parsed successfully, whose top level is an object. nullopt
// when there is no such member.
std::optional<std::string_view> raw_member(std::string_view object_text, std::string_view key);

}  // namespace exthost::server
