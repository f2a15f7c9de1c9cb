// store/memory_store.hpp — memory records in one SQLite database (SPEC §5.13, A7).
//
// Records of every namespace live in one database file: WAL journal, a durable commit per
// append (synchronous=FULL), writers in several processes serialized by SQLite's lock with
// a 5 s busy timeout. A process killed mid-append leaves the database consistent: the
// transaction either committed (and was acknowledged) or never happened.
//
// Thread safety: one MemoryStore may be used from any number of threads (the connection is
// opened in serialized mode). Every call blocks on disk I/O: never call it on an event loop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"

struct sqlite3;

namespace exthost::store {

// The reference's cap on one record's content: memory is for notes, not documents.
inline constexpr std::size_t k_max_content_bytes = 16384;
// The reference's cap on a namespace name (it is an extension id).
inline constexpr std::size_t k_max_namespace_bytes = 64;
// Records a query returns when it names no limit (reference default).
inline constexpr std::uint64_t k_default_query_limit = 50;
// How long a writer waits for another process's write lock before failing (A7).
inline constexpr int k_busy_timeout_ms = 5000;

struct MemoryRecord {
  std::string ns;  // "namespace" on the wire
  std::uint64_t timestamp_ms = 0;
  std::string content;
  std::vector<std::string> tags;
  std::optional<std::string> meta_json;  // any JSON value, kept as compact text
};

// Every member optional except the namespace; all given filters must hold (AND).
struct MemoryQuery {
  std::string ns;
  std::optional<std::string> content_contains;  // case-insensitive (ASCII letters)
  std::optional<std::string> tag_prefix;        // some tag starts with it
  std::optional<std::uint64_t> since_ms;        // inclusive
  std::optional<std::uint64_t> until_ms;        // inclusive
  std::optional<std::uint64_t> limit;           // default k_default_query_limit; 0 → none
};

// "invalid namespace: \"a/b\"" unless `ns` is 1–64 bytes without '/', '\\', ".." or whitespace.
Result<void> validate_namespace(std::string_view ns);

// Milliseconds since the epoch, now.
std::uint64_t now_ms();

class MemoryStore {
 public:
  // Opens (creating) the database at `path`: its folder gets mode 0700, the file 0600.
  static Result<std::unique_ptr<MemoryStore>> open(const std::filesystem::path& path);
  ~MemoryStore();
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  // Validates and appends `record`; returns once the commit is durable.
  // Errors: "invalid namespace: …", "content too large: N bytes (max 16384)",
  // "memory io error: …".
  Result<void> append(const MemoryRecord& record);

  // Matching records, newest first; records with equal timestamps keep append order.
  Result<std::vector<MemoryRecord>> query(const MemoryQuery& query) const;

  // Every namespace holding a record, sorted.
  Result<std::vector<std::string>> list_namespaces() const;

  // "ok" when SQLite's integrity check passes, else its report.
  Result<std::string> integrity_check() const;

 private:
  explicit MemoryStore(sqlite3* db) : m_db(db) {}
  sqlite3* m_db;  // owned; serialized mode, so shared by every thread
};

}  // namespace exthost::store
