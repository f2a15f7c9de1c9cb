#include "store/memory_cursor.hpp"

#include <charconv>
#include <limits>

namespace exthost::store {
namespace {

constexpr std::string_view k_cursor_prefix = "m1.";
constexpr std::uint64_t k_max_stored = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// One decimal number (digits only, no leading zero unless it is 0), then its dot unless `last`.
std::optional<std::uint64_t> number(std::string_view& text, bool last) {
  const auto stop = last ? text.size() : text.find('.');
  if (stop == std::string_view::npos || stop == 0) return std::nullopt;
  const std::string_view digits = text.substr(0, stop);
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  text.remove_prefix(last ? stop : stop + 1);
  return value;
}

}  // namespace

std::string encode_cursor(const MemoryCursor& cursor) {
  return std::string(k_cursor_prefix) + std::to_string(cursor.timestamp_ms) + "." + std::to_string(cursor.seq) + "." +
         std::to_string(cursor.remaining);
}

std::optional<MemoryCursor> decode_cursor(std::string_view text) {
  if (text.size() > k_max_cursor_bytes || text.substr(0, k_cursor_prefix.size()) != k_cursor_prefix) return std::nullopt;
  text.remove_prefix(k_cursor_prefix.size());
  if (text.find_first_not_of("0123456789.") != std::string_view::npos) return std::nullopt;
  const auto timestamp = number(text, false);
  const auto seq = timestamp ? number(text, false) : std::nullopt;
  const auto remaining = seq ? number(text, true) : std::nullopt;
  if (!remaining || !text.empty() || *remaining == 0) return std::nullopt;
  // Row numbers and timestamps are SQLite integers: a larger one was never made here.
  if (*timestamp > k_max_stored || *seq > k_max_stored) return std::nullopt;
  return MemoryCursor{*timestamp, *seq, *remaining};
}

}  // namespace exthost::store
