// store/memory_cursor.hpp — where a page of a memory query ended, as an opaque string.
//
// A query answers newest first (timestamp descending, then append order); the cursor holds
// the last record's timestamp and row number, so the next page starts right after it
// whatever was appended meantime, and how many records the query may still return.
//
// The text is the extension's to hand back, never to read: "m1." then the three numbers in
// decimal, dot-separated. Anything else is refused rather than guessed at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace exthost::store {

// The longest cursor text accepted: three 20-digit numbers, their dots and the prefix.
inline constexpr std::size_t k_max_cursor_bytes = 66;

struct MemoryCursor {
  std::uint64_t timestamp_ms = 0;  // of the last record returned
  std::uint64_t seq = 0;           // its row number
  std::uint64_t remaining = 0;     // records the query may still return (> 0)
  bool operator==(const MemoryCursor&) const = default;
};

std::string encode_cursor(const MemoryCursor& cursor);
// nullopt unless `text` is exactly what encode_cursor makes (remaining > 0).
std::optional<MemoryCursor> decode_cursor(std::string_view text);

}  // namespace exthost::store
