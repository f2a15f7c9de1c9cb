// store/config_store.hpp — `key = value` configuration files (SPEC §5.5, A7).
//
// One pair per line; blank lines and lines starting with '#' are ignored; a line splits at
// its first '='; key and value are trimmed; the first line with a key wins. A write
// replaces the first line holding the key (or appends one), keeps every other line —
// comments included — verbatim, and replaces the file atomically with mode 0600.
//
// Used for a plugin's own store (<home>/plugins/<id>/config) and for the host's config
// file (<home>/config). A file is read only if it is a regular file of at most
// k_max_config_file_bytes; opening it never waits (a FIFO is refused, not opened for
// reading). Thread safety: free functions, no shared state, blocking on the disk only; two
// writers of one file never corrupt it (each renames a complete file), the last rename wins.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exthost/result.hpp"
#include "util/bounded_file.hpp"

namespace exthost::store {

// The largest config file read: a few hundred pairs take a few KiB.
inline constexpr std::size_t k_max_config_file_bytes = 1024 * 1024;

// Every pair of `text`, in order (duplicates kept; readers take the first).
std::vector<std::pair<std::string, std::string>> parse_config_text(std::string_view text);

// The value of the first line whose key is `key`; nullopt when the file or key is absent.
// Error: "config io error: …" naming the file, when it exists but is refused (not a regular
// file, over the cap, a symbolic link under Symlinks::refuse, unreadable).
Result<std::optional<std::string>> find_config_value(const std::filesystem::path& file, std::string_view key,
                                                     util::Symlinks links = util::Symlinks::follow);

// find_config_value for a caller with no way to fail: a refused file counts as absent, and
// a warning naming it goes to the log.
std::optional<std::string> read_config_value(const std::filesystem::path& file, std::string_view key);

// Sets `key` to `value` (trimmed), creating the file and its folders if needed. An existing
// file is read under the same rules as find_config_value first.
// Error: "config io error: …" naming the file.
Result<void> write_config_value(const std::filesystem::path& file, std::string_view key, std::string_view value,
                                util::Symlinks links = util::Symlinks::follow);

}  // namespace exthost::store
