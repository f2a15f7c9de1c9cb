// store/memory_store.hpp — memory records in one SQLite database (SPEC §5.13, A7, A18).
//
// Records of every namespace live in one database file: WAL journal, a durable commit per
// append (synchronous=FULL), writers in several processes serialized by SQLite's lock with
// a 5 s busy timeout. A process killed mid-append leaves the database consistent: the
// transaction either committed (and was acknowledged) or never happened.
//
// Bounded answers: a record's meta and tags are capped, and a query returns one page of at
// most MemoryQuery::page_bytes of record JSON, with the position to go on from, so that no
// answer outgrows a frame whatever the database holds. Records stored before the caps, or
// imported over them, come back cut to them (MemoryRecord::truncated).
//
// A database that cannot be written (a read-only home) is opened read-only: queries are
// answered, appends fail with an error saying so. Where there is no database at all and
// none can be made, an empty one in memory stands in (the reference's files below are
// still read into it).
//
// The reference's records: `<folder>/<namespace>.jsonl` beside the database (the
// reference's own store, memory_import.hpp) is imported into the database once, at the
// namespace's first use, inside one transaction that also records the import, so that
// concurrent hosts and later runs never import it twice.
//
// Thread safety: one MemoryStore may be used from any number of threads (the connection is
// opened in serialized mode; writes and imports take the store's own lock, so that no
// append ever lands inside an import's transaction). Every call blocks on disk I/O: never
// call it on an event loop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"
#include "store/memory_cursor.hpp"

struct sqlite3;

namespace exthost::store {

// The reference's cap on one record's content: memory is for notes, not documents.
inline constexpr std::size_t k_max_content_bytes = 16384;
// A record's meta, as compact JSON text: notes about a note, not a second document.
inline constexpr std::size_t k_max_meta_bytes = 16384;
// Tags per record, and bytes per tag.
inline constexpr std::size_t k_max_tags = 32;
inline constexpr std::size_t k_max_tag_bytes = 256;
// The reference's cap on a namespace name (it is an extension id).
inline constexpr std::size_t k_max_namespace_bytes = 64;
// Records a query returns when it names no limit (reference default).
inline constexpr std::uint64_t k_default_query_limit = 50;
// The record JSON one query answer carries at most: 3 MiB, so that the answer's frame
// (records, cursor, the request's id and the JSON-RPC envelope) stays under the 4 MiB frame
// cap. A capped record takes at most about 170 KiB, so a page always holds one.
inline constexpr std::size_t k_query_page_bytes = 3 * 1024 * 1024;
// How long a writer waits for another process's write lock before failing (A7).
inline constexpr int k_busy_timeout_ms = 5000;

struct MemoryRecord {
  std::string ns;  // "namespace" on the wire
  std::uint64_t timestamp_ms = 0;
  std::string content;
  std::vector<std::string> tags;
  std::optional<std::string> meta_json;  // any JSON value, kept as compact text
  // Set on a record a query cut to the caps: its meta was left out, its tags cut.
  bool truncated = false;
};

// Every member optional except the namespace; all given filters must hold (AND).
struct MemoryQuery {
  std::string ns;
  std::optional<std::string> content_contains;  // case-insensitive (ASCII letters)
  std::optional<std::string> tag_prefix;        // some tag starts with it
  std::optional<std::uint64_t> since_ms;        // inclusive
  std::optional<std::uint64_t> until_ms;        // inclusive
  std::optional<std::uint64_t> limit;           // default k_default_query_limit; 0 → none
  // Where a previous page ended; its remaining count replaces `limit`.
  std::optional<MemoryCursor> after = std::nullopt;
  // The most record JSON (record_json_bytes) one page holds; a page holds at least one record.
  std::size_t page_bytes = k_query_page_bytes;
};

// One page of a query's answer: its records, and where the next page starts when more may
// match (none once the limit is reached or nothing is left).
struct MemoryPage {
  std::vector<MemoryRecord> records;
  std::optional<MemoryCursor> next;
};

// "invalid namespace: \"a/b\"" unless `ns` is 1–64 bytes without '/', '\\', ".." or whitespace.
Result<void> validate_namespace(std::string_view ns);

// The caps on meta and tags, in the reference's style of words:
// "meta too large: N bytes (max 16384)", "too many tags: N (max 32)",
// "tag too large: N bytes (max 256)".
Result<void> validate_meta_and_tags(const MemoryRecord& record);

// Milliseconds since the epoch, now.
std::uint64_t now_ms();

class MemoryStore {
 public:
  // Opens (creating) the database at `path`: its folder gets no more than mode 0700, the
  // file 0600. Where the database cannot be opened for writing (a read-only file system, a
  // file or folder without write permission), it is opened read-only instead, or, when it
  // does not exist, an empty database in memory stands in; read_only() then says why.
  static Result<std::unique_ptr<MemoryStore>> open(const std::filesystem::path& path);
  ~MemoryStore();
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  // Validates and appends `record`; returns once the commit is durable.
  // Errors: "invalid namespace: …", "content too large: N bytes (max 16384)", the caps of
  // validate_meta_and_tags, "memory io error: …", and for a read-only store
  // "memory io error: records cannot be written: <path> is read-only: <why>".
  Result<void> append(const MemoryRecord& record);

  // One page of the matching records, newest first; records with equal timestamps keep
  // append order.
  Result<MemoryPage> query(const MemoryQuery& query);

  // Every namespace holding a record, sorted.
  Result<std::vector<std::string>> list_namespaces() const;

  // "ok" when SQLite's integrity check passes, else its report.
  Result<std::string> integrity_check() const;

  // Why the database is open read-only ("Read-only file system (os error 30)", …); none
  // when it is writable.
  const std::optional<std::string>& read_only() const { return m_read_only; }

 private:
  MemoryStore(sqlite3* db, std::filesystem::path path, std::optional<std::string> read_only, bool in_memory)
      : m_db(db), m_path(std::move(path)), m_read_only(std::move(read_only)), m_in_memory(in_memory) {}
  // Imports <folder>/<ns>.jsonl once (see above); what fails is logged, never returned:
  // the namespace's own records are answered all the same.
  void import_once(const std::string& ns);
  Result<void> import_records(const std::string& ns, const std::filesystem::path& file,
                              const std::vector<MemoryRecord>& records, std::size_t skipped);

  sqlite3* m_db;  // owned; serialized mode, so shared by every thread
  std::filesystem::path m_path;
  std::optional<std::string> m_read_only;
  bool m_in_memory;  // the stand-in for a database that does not exist and cannot be made
  std::mutex m_write_mutex;            // an append never lands inside an import's transaction
  std::mutex m_import_mutex;           // guards m_import_checked
  std::set<std::string> m_import_checked;  // namespaces whose import this store has settled
};

}  // namespace exthost::store
