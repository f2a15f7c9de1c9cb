// util/text.hpp — small text helpers with no exthost knowledge.
#pragma once

#include <string>
#include <string_view>

namespace exthost::util {

// Trims ASCII whitespace (space, \t, \n, \v, \f, \r) from both ends.
std::string_view trim(std::string_view s);

// Case-insensitive comparison of ASCII letters; other bytes must match exactly.
bool iequals_ascii(std::string_view a, std::string_view b);

// Whether `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view s);

// The longest prefix of `s` of at most `max_bytes` bytes that ends on a character boundary
// (assuming `s` is UTF-8; a malformed tail is cut like any other).
std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes);

// Replaces every malformed UTF-8 sequence with U+FFFD, as a lossy decoder does.
std::string utf8_lossy(std::string_view s);

// Quotes `s` the way the reference design prints values in its error texts: in double
// quotes, with backslash, quote and control characters escaped ("\n", "\t", "\u{1b}").
std::string debug_quote(std::string_view s);

// "No such file or directory (os error 2)": an errno as the reference design prints it.
std::string os_error_text(int err);

}  // namespace exthost::util

namespace exthost::util {
// The reference's switch values: "1", "true", "yes", "on" (trimmed, any case) are on;
// anything else, the empty string included, is off.
bool is_truthy(std::string_view s);
}  // namespace exthost::util
