// protocol/id_segment.hpp — the rule shared by tool names, provider ids and model ids
// (SPEC §5.6.1): non-empty, at most 64 bytes, no control characters, no ':', no whitespace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace exthost::protocol {

// Long enough for any descriptive name, short enough for namespaced "plugin:tool" names to
// stay within the 128-character API tool-name limit of model providers.
inline constexpr std::size_t k_max_id_length = 64;

struct IdSegmentError {
  enum class Kind { empty, too_long, control, reserved, whitespace } kind;
  std::size_t length = 0;       // too_long: the byte length
  char32_t character = 0;       // control / reserved: the offending character
  // "must not be empty", "must be at most 64 chars (got 70)", …
  std::string display() const;
};

// Checks in the reference order: empty, too long, control (not whitespace), reserved ':',
// whitespace. Does not trim.
std::optional<IdSegmentError> validate_id_segment(std::string_view s);

// "U+001B": at least four uppercase hex digits.
std::string unicode_name(char32_t c);
// The UTF-8 encoding of one character.
std::string utf8_encode(char32_t c);

}  // namespace exthost::protocol
