// serve/request_id.cpp — a scan of the top level of a JSON object that is already known to
// be valid, keeping the raw text of one member.
#include "serve/request_id.hpp"

#include <cstdint>
#include <string>

namespace exthost::server {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at `i`, or -1.
long hex4(std::string_view s, std::size_t i) {
  if (i + 4 > s.size()) return -1;
  long v = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const int d = hex_digit(s[i + k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The string starting at the quote at `i`, decoded (a key may spell "id" with escapes);
// `end` is set past the closing quote. nullopt on malformed input.
std::optional<std::string> decode_string(std::string_view s, std::size_t i, std::size_t& end) {
  std::string out;
  for (++i; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      end = i + 1;
      return out;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    switch (s[i]) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        long cp = hex4(s, i + 1);
        if (cp < 0) return std::nullopt;
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 2 < s.size() && s[i + 1] == '\\' && s[i + 2] == 'u') {
          const long low = hex4(s, i + 3);
          if (low >= 0xDC00 && low <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
          }
        }
        append_utf8(out, static_cast<std::uint32_t>(cp));
        break;
      }
      default: out += s[i]; break;  // \" \\ \/
    }
  }
  return std::nullopt;
}

// Past the string starting at the quote at `i`; npos when it does not end.
std::size_t skip_string(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Past the value starting at `i`; npos on malformed input.
std::size_t skip_value(std::string_view s, std::size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    std::size_t depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = skip_string(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  // A number or a literal: up to the next delimiter.
  while (i < s.size() && !is_space(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
  return i;
}

}  // namespace

std::optional<std::string_view> raw_member(std::string_view object_text, std::string_view key) {
  const std::string_view& s = object_text;
  std::size_t i = skip_space(s, 0);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  std::optional<std::string_view> found;
  i = skip_space(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    std::size_t after_key = 0;
    auto name = decode_string(s, i, after_key);
    if (!name) return std::nullopt;
    i = skip_space(s, after_key);
    if (i >= s.size() || s[i] != ':') return std::nullopt;
    i = skip_space(s, i + 1);
    const std::size_t start = i;
    i = skip_value(s, i);
    if (i == std::string_view::npos) return std::nullopt;
    if (*name == key) found = s.substr(start, i - start);
    i = skip_space(s, i);
    if (i >= s.size() || s[i] != ',') break;
    i = skip_space(s, i + 1);
  }
  return found;
}

}  // namespace exthost::server
