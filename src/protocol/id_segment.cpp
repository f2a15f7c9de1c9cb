#include "protocol/id_segment.hpp"

#include <cstdio>

namespace exthost::protocol {
namespace {

// Decodes the character at s[i] (well-formed UTF-8 assumed: JSON strings are validated);
// advances i. A malformed byte decodes as itself.
char32_t next_char(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 1;
  if (i + len > s.size()) len = 1;
  char32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (std::size_t k = 1; k < len; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return c;
}

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_control(char32_t c) { return c <= 0x1F || (c >= 0x7F && c <= 0x9F); }

}  // namespace

std::string unicode_name(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

std::string utf8_encode(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

std::string IdSegmentError::display() const {
  switch (kind) {
    case Kind::empty: return "must not be empty";
    case Kind::too_long:
      return "must be at most " + std::to_string(k_max_id_length) + " chars (got " + std::to_string(length) + ")";
    case Kind::control: return "must not contain control character " + unicode_name(character);
    case Kind::reserved: return "must not contain reserved character '" + utf8_encode(character) + "'";
    case Kind::whitespace: return "must not contain whitespace";
  }
  return "invalid";
}

std::optional<IdSegmentError> validate_id_segment(std::string_view s) {
  using K = IdSegmentError::Kind;
  if (s.empty()) return IdSegmentError{K::empty};
  if (s.size() > k_max_id_length) return IdSegmentError{K::too_long, s.size()};
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = next_char(s, i);
    if (is_control(c) && !is_whitespace(c)) return IdSegmentError{K::control, 0, c};
  }
  for (std::size_t i = 0; i < s.size();) {
    if (next_char(s, i) == U':') return IdSegmentError{K::reserved, 0, U':'};
  }
  for (std::size_t i = 0; i < s.size();) {
    if (is_whitespace(next_char(s, i))) return IdSegmentError{K::whitespace};
  }
  return std::nullopt;
}

}  // namespace exthost::protocol
