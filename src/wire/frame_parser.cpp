#include "wire/frame_parser.hpp"

#include <cstring>
#include <limits>

#include "util/text.hpp"

namespace exthost::wire {
namespace {

// Parses an unsigned decimal as the reference does (an optional '+', then digits, no
// overflow); nullopt on anything else.
std::optional<std::uint64_t> parse_unsigned(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (n > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  return n;
}

}  // namespace

FrameParser::FrameParser(std::string extension_id) : m_extension_id(std::move(extension_id)) {}

bool FrameParser::between_frames() const {
  return m_state == State::headers && !m_saw_header && m_line.empty();
}

FrameParser::Step FrameParser::feed(std::string_view input) {
  Step step;
  while (step.consumed < input.size() && m_state != State::failed) {
    std::string_view rest = input.substr(step.consumed);
    if (m_state == State::headers) {
      const std::size_t room = k_header_read_bound - m_line.size();
      const std::size_t window = rest.size() < room ? rest.size() : room;
      const void* nl = std::memchr(rest.data(), '\n', window);
      const std::size_t take =
          nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - rest.data()) + 1 : window;
      m_line.append(rest.data(), take);
      step.consumed += take;
      if (nl || m_line.size() == k_header_read_bound) {
        if (auto err = end_of_line()) {
          m_state = State::failed;
          step.error = std::move(err);
          return step;
        }
        if (m_state == State::body && m_body_length == 0) {
          m_state = State::headers;
          step.body = std::string_view{};
          return step;
        }
      }
      continue;
    }
    // Body: hand out a view into the input when the whole body is there, else collect.
    const std::size_t need = m_body_length - m_body.size();
    if (m_body.empty() && rest.size() >= need) {
      step.consumed += need;
      step.body = rest.substr(0, need);
      m_state = State::headers;
      return step;
    }
    const std::size_t take = rest.size() < need ? rest.size() : need;
    if (m_body.empty()) m_body.reserve(m_body_length);
    m_body.append(rest.data(), take);
    step.consumed += take;
    if (m_body.size() == m_body_length) {
      m_state = State::headers;
      step.body = std::string_view(m_body);
      return step;
    }
  }
  return step;
}

std::optional<std::string> FrameParser::end_of_line() {
  // A new frame starts with this line: forget the previous frame's collected body.
  if (!m_saw_header) {
    m_body.clear();
    m_content_length.reset();
    m_header_bytes = 0;
  }
  m_saw_header = true;
  std::string line;
  line.swap(m_line);
  m_header_bytes += line.size();
  if (m_header_bytes > k_max_header_block) {
    return "Extension '" + m_extension_id + "' frame headers too long (more than " +
           std::to_string(k_max_header_block) + " bytes)";
  }
  if (!util::is_valid_utf8(line)) return "Read header error: stream did not contain valid UTF-8";
  if (line.size() > k_max_header_line) {
    return "Extension '" + m_extension_id + "' header line too long (" + std::to_string(line.size()) +
           " bytes)";
  }
  const std::string_view trimmed = util::trim(line);
  if (trimmed.empty()) return end_of_headers();
  const std::size_t colon = trimmed.find(':');
  if (colon == std::string_view::npos) return std::nullopt;  // not a header: ignored
  if (util::iequals_ascii(util::trim(trimmed.substr(0, colon)), "Content-Length")) {
    const std::string_view value = util::trim(trimmed.substr(colon + 1));
    const auto n = parse_unsigned(value);
    if (!n) return "Invalid Content-Length value: " + util::debug_quote(value);
    m_content_length = *n;  // a later Content-Length overrides an earlier one
  }
  return std::nullopt;
}

std::optional<std::string> FrameParser::end_of_headers() {
  m_saw_header = false;
  if (!m_content_length) {
    return "Extension '" + m_extension_id + "' frame missing Content-Length header";
  }
  if (*m_content_length > k_max_frame_body) {
    return "Extension '" + m_extension_id + "' frame too large: " + std::to_string(*m_content_length) +
           " bytes (max " + std::to_string(k_max_frame_body) + ")";
  }
  m_body_length = static_cast<std::size_t>(*m_content_length);
  m_content_length.reset();
  m_body.clear();
  m_state = State::body;
  return std::nullopt;
}

std::optional<std::string> FrameParser::finish() const {
  switch (m_state) {
    case State::headers:
      if (!m_saw_header && m_line.empty()) return std::nullopt;
      return "Unexpected EOF while reading response headers";
    case State::body:
      return "Read body error: early eof";
    case State::failed:
      return "transport already failed";
  }
  return std::nullopt;
}

}  // namespace exthost::wire
