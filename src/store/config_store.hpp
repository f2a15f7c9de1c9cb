// store/config_store.hpp — `key = value` configuration files (SPEC §5.5, A7).
//
// One pair per line; blank lines and lines starting with '#' are ignored; a line splits at
// its first '='; key and value are trimmed; the first line with a key wins. A write
// replaces the first line holding the key (or appends one), keeps every other line —
// comments included — verbatim, and replaces the file atomically with mode 0600.
//
// Used for a plugin's own store (<home>/plugins/<id>/config) and for the host's config
// file (<home>/config). Thread safety: free functions, no shared state; two writers of one
// file never corrupt it (each renames a complete file), the last rename wins.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::store {

// Every pair of `text`, in order (duplicates kept; readers take the first).
std::vector<std::pair<std::string, std::string>> parse_config_text(std::string_view text);

// The value of the first line whose key is `key`; nullopt when the file or key is absent.
std::optional<std::string> read_config_value(const std::filesystem::path& file, std::string_view key);

// Sets `key` to `value` (trimmed), creating the file and its folders if needed.
// Error: "config io error: …" naming the file.
Result<void> write_config_value(const std::filesystem::path& file, std::string_view key, std::string_view value);

}  // namespace exthost::store
