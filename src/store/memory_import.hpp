// store/memory_import.hpp — reading the reference's memory records: one file per namespace,
// `<folder>/<namespace>.jsonl`, one record a line (SPEC §5.13), beside the database.
//
// The file comes from outside: it is read only when it is a regular file that is not a
// symbolic link, at most k_max_import_file_bytes long (judged before reading and again if it
// grows), without blocking on a FIFO. A line that is not a record of the namespace is
// skipped with a warning naming the file and the line; blank lines are skipped silently, as
// the reference does.
//
// Thread safety: free functions without shared state; they block on the disk.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"
#include "store/memory_store.hpp"

namespace exthost::store {

// The largest reference file imported: a few thousand full records, far more short notes.
inline constexpr std::size_t k_max_import_file_bytes = 64 * 1024 * 1024;
// Skipped lines warned about one by one, per file; the count of all of them follows.
inline constexpr std::size_t k_import_warnings_logged = 10;

struct ReferenceRecords {
  std::vector<MemoryRecord> records;  // in file order
  std::size_t skipped = 0;            // lines that held no record of the namespace
};

// <folder>/<ns>.jsonl
std::filesystem::path reference_file(const std::filesystem::path& folder, std::string_view ns);

// The namespace's records in `file`; nullopt when there is no such file. Errors (kind
// internal) when the file is refused: "<file> is not a regular file (a FIFO)", "<file> is a
// symbolic link (links are not followed here)", "<file> is <n> bytes, over the cap of
// <cap> bytes", "cannot open <file>: …".
Result<std::optional<ReferenceRecords>> read_reference_records(const std::filesystem::path& file, std::string_view ns);

}  // namespace exthost::store
