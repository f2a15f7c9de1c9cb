#include "store/memory_store.hpp"

#include <sqlite3.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <limits>
#include <system_error>
#include <thread>

#include "store/memory_import.hpp"
#include "store/memory_record_json.hpp"
#include "util/bounded_file.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::store {
namespace {

Error io_error(sqlite3* db, std::string_view what) {
  return Error::internal("memory io error: " + std::string(what) + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { m_rc = sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr); }
  ~Statement() { sqlite3_finalize(m_stmt); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return m_rc == SQLITE_OK; }
  sqlite3_stmt* get() const { return m_stmt; }
  void bind_text(int i, std::string_view s) {
    sqlite3_bind_text(m_stmt, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void bind_int(int i, std::uint64_t v) { sqlite3_bind_int64(m_stmt, i, static_cast<sqlite3_int64>(v)); }

 private:
  sqlite3_stmt* m_stmt = nullptr;
  int m_rc = SQLITE_ERROR;
};

std::string column_text(sqlite3_stmt* s, int i) {
  const auto* p = sqlite3_column_text(s, i);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
           : std::string();
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string encode_tags(const std::vector<std::string>& tags) {
  boost::json::array a;
  for (const auto& t : tags) a.emplace_back(t);
  return boost::json::serialize(a);
}

std::vector<std::string> decode_tags(const std::string& text) {
  std::vector<std::string> tags;
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec || !v.is_array()) return tags;
  for (const auto& t : v.as_array()) {
    if (t.is_string()) tags.emplace_back(t.as_string());
  }
  return tags;
}

// Runs `sql` (no rows wanted), retrying while another process holds the database during
// its own first-time setup, up to the busy timeout.
int exec_retrying(sqlite3* db, const char* sql) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_busy_timeout_ms);
  for (;;) {
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() > deadline) return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

constexpr const char* k_schema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS memory_records("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  namespace TEXT NOT NULL,"
    "  timestamp_ms INTEGER NOT NULL,"
    "  content TEXT NOT NULL,"
    "  tags TEXT NOT NULL,"
    "  meta TEXT);"
    "CREATE INDEX IF NOT EXISTS memory_records_by_time ON memory_records(namespace, timestamp_ms);"
    // One row per namespace whose reference file was imported, written in the import's
    // own transaction.
    "CREATE TABLE IF NOT EXISTS memory_imports("
    "  namespace TEXT PRIMARY KEY,"
    "  file TEXT NOT NULL,"
    "  records INTEGER NOT NULL,"
    "  skipped INTEGER NOT NULL,"
    "  imported_ms INTEGER NOT NULL);";

// Whether an open or a first statement failed because the database cannot be written.
bool is_unwritable(int err) { return err == EROFS || err == EACCES || err == EPERM; }
bool is_unwritable_sqlite(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM ||
         primary == SQLITE_AUTH;
}

// `path` as an SQLite URI ("file:" and the path with every byte but the unreserved ones and
// '/' percent-encoded), then `query`.
std::string sqlite_uri(const std::filesystem::path& path, std::string_view query) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const unsigned char c : path.string()) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                            c == '/' || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += k_hex[c >> 4];
      uri += k_hex[c & 0xf];
    }
  }
  uri += '?';
  uri += query;
  return uri;
}

// Whether the schema of `db` can be read: SQLite opens lazily, so a read-only WAL database
// whose shared-memory file cannot be made fails only at its first statement.
bool schema_readable(sqlite3* db) {
  Statement probe(db, "SELECT count(*) FROM sqlite_master");
  return probe.ok() && sqlite3_step(probe.get()) == SQLITE_ROW;
}

// `uri` opened read-only and readable, or nullptr.
sqlite3* open_read_only_uri(const std::string& uri) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr) !=
          SQLITE_OK ||
      (sqlite3_busy_timeout(db, k_busy_timeout_ms), !schema_readable(db))) {
    sqlite3_close(db);
    return nullptr;
  }
  return db;
}

// A record as a query may answer it: content, meta and tags within the caps (a record
// stored before them, or imported, may hold more). Marks it truncated when anything was cut.
void cut_to_caps(MemoryRecord& r) {
  if (r.content.size() > k_max_content_bytes) {
    r.content = std::string(util::utf8_prefix(r.content, k_max_content_bytes));
    r.truncated = true;
  }
  if (r.meta_json && r.meta_json->size() > k_max_meta_bytes) {
    r.meta_json.reset();
    r.truncated = true;
  }
  const auto before = r.tags.size();
  std::erase_if(r.tags, [](const std::string& t) { return t.size() > k_max_tag_bytes; });
  if (r.tags.size() > k_max_tags) r.tags.resize(k_max_tags);
  if (r.tags.size() != before) r.truncated = true;
}

// Checks that `fd` is a regular file; closes it either way.
Result<void> regular_file(int fd, const std::filesystem::path& path) {
  struct stat st {};
  const int stat_err = ::fstat(fd, &st) == 0 ? 0 : errno;
  ::close(fd);
  if (stat_err != 0) {
    return Error::internal("memory io error: cannot open " + path.string() + ": " + util::os_error_text(stat_err));
  }
  if (!S_ISREG(st.st_mode)) {
    return Error::internal("memory io error: " + path.string() + " is not a regular file (" +
                           util::file_kind(st.st_mode) + ")");
  }
  return {};
}

}  // namespace

Result<void> validate_namespace(std::string_view ns) {
  const bool bad = ns.empty() || ns.size() > k_max_namespace_bytes || ns.find('/') != std::string_view::npos ||
                   ns.find('\\') != std::string_view::npos || ns.find("..") != std::string_view::npos ||
                   std::any_of(ns.begin(), ns.end(), [](char c) {
                     return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
                   });
  if (bad) return Error::usage("invalid namespace: " + util::debug_quote(ns));
  return {};
}

Result<void> validate_meta_and_tags(const MemoryRecord& record) {
  if (record.meta_json && record.meta_json->size() > k_max_meta_bytes) {
    return Error::usage("meta too large: " + std::to_string(record.meta_json->size()) + " bytes (max " +
                        std::to_string(k_max_meta_bytes) + ")");
  }
  if (record.tags.size() > k_max_tags) {
    return Error::usage("too many tags: " + std::to_string(record.tags.size()) + " (max " +
                        std::to_string(k_max_tags) + ")");
  }
  for (const auto& t : record.tags) {
    if (t.size() > k_max_tag_bytes) {
      return Error::usage("tag too large: " + std::to_string(t.size()) + " bytes (max " +
                          std::to_string(k_max_tag_bytes) + ")");
    }
  }
  return {};
}

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

Result<std::unique_ptr<MemoryStore>> MemoryStore::open(const std::filesystem::path& path) {
  // Why the database cannot be written, once that is known.
  std::optional<std::string> unwritable;
  std::error_code ec;
  const auto dir = path.parent_path();
  if (!dir.empty()) {
    std::filesystem::create_directories(dir, ec);
    if (ec && !is_unwritable(ec.value())) {
      return Error::internal("memory io error: cannot create " + dir.string() + ": " + ec.message());
    }
    if (ec) {
      unwritable = util::os_error_text(ec.value());
    } else if (struct stat st {}; ::stat(dir.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      // Records may hold anything an extension saw: the folder is the owner's alone. The
      // owner's own bits are kept, so that a folder made read-only stays read-only.
      ::chmod(dir.c_str(), st.st_mode & 0700);
    }
  }
  sqlite3* db = nullptr;
  if (!unwritable) {
    // The file is created 0600 whatever the umask (SQLite gives its -wal and -shm files the
    // same mode), and a symlink in its place is refused. O_NONBLOCK and the type check:
    // SQLite would otherwise block reading a FIFO put there.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
    const int err = fd < 0 ? errno : 0;
    if (fd < 0 && !is_unwritable(err)) {
      return Error::internal("memory io error: cannot open " + path.string() + ": " + util::os_error_text(err));
    }
    if (fd < 0) {
      unwritable = util::os_error_text(err);
    } else if (auto regular = regular_file(fd, path); !regular) {
      return std::move(regular).error();
    }
  }
  if (!unwritable) {
    const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                   nullptr);
    if (rc != SQLITE_OK) {
      Error e = io_error(db, "cannot open " + path.string());
      sqlite3_close(db);
      return e;
    }
    ::chmod(path.c_str(), 0600);  // repair a broader mode left by someone else
    sqlite3_busy_timeout(db, k_busy_timeout_ms);
    const int schema = exec_retrying(db, k_schema);
    if (schema != SQLITE_OK && is_unwritable_sqlite(sqlite3_extended_errcode(db))) {
      // The file can be written, but not the folder that must hold its journal.
      unwritable = std::string(sqlite3_errmsg(db));
      sqlite3_close(db);
      db = nullptr;
    } else if (schema != SQLITE_OK) {
      Error e = io_error(db, "cannot prepare " + path.string());
      sqlite3_close(db);
      return e;
    } else {
      return std::unique_ptr<MemoryStore>(new MemoryStore(db, path, std::nullopt, false));
    }
  }

  // Read-only from here: the records there are answered, nothing is written.
  util::log().warn("memory: {} cannot be written: {}; memory is read-only for this host", path.string(), *unwritable);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  const int err = fd < 0 ? errno : 0;
  if (fd < 0 && err != ENOENT) {
    return Error::internal("memory io error: cannot open " + path.string() + ": " + util::os_error_text(err));
  }
  if (fd < 0) {
    // No database: an empty one in memory, for the reference's records at least.
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
            SQLITE_OK ||
        sqlite3_exec(db, k_schema, nullptr, nullptr, nullptr) != SQLITE_OK) {
      Error e = io_error(db, "cannot prepare a database in memory");
      sqlite3_close(db);
      return e;
    }
    return std::unique_ptr<MemoryStore>(new MemoryStore(db, path, unwritable, true));
  }
  if (auto regular = regular_file(fd, path); !regular) return std::move(regular).error();
  // Read-only while others may write it; failing that (a WAL database whose shared-memory
  // file cannot be made here), as a file nobody changes.
  db = open_read_only_uri(sqlite_uri(path, "mode=ro"));
  if (db == nullptr) db = open_read_only_uri(sqlite_uri(path, "immutable=1"));
  if (db == nullptr) {
    return Error::internal("memory io error: cannot open " + path.string() + " even read-only (it cannot be written: " +
                           *unwritable + ")");
  }
  return std::unique_ptr<MemoryStore>(new MemoryStore(db, path, unwritable, false));
}

MemoryStore::~MemoryStore() { sqlite3_close(m_db); }

Result<void> MemoryStore::append(const MemoryRecord& record) {
  if (auto valid = validate_namespace(record.ns); !valid) return valid;
  if (record.content.size() > k_max_content_bytes) {
    return Error::usage("content too large: " + std::to_string(record.content.size()) + " bytes (max " +
                        std::to_string(k_max_content_bytes) + ")");
  }
  if (auto capped = validate_meta_and_tags(record); !capped) return capped;
  if (m_read_only) {
    return Error::internal("memory io error: records cannot be written: " + m_path.string() + " is read-only: " +
                           *m_read_only);
  }
  import_once(record.ns);  // the reference's records come first
  std::lock_guard lock(m_write_mutex);
  Statement insert(m_db,
                   "INSERT INTO memory_records(namespace, timestamp_ms, content, tags, meta) VALUES(?1, ?2, ?3, ?4, ?5)");
  if (!insert.ok()) return io_error(m_db, "append");
  insert.bind_text(1, record.ns);
  insert.bind_int(2, record.timestamp_ms);
  insert.bind_text(3, record.content);
  insert.bind_text(4, encode_tags(record.tags));
  if (record.meta_json) {
    insert.bind_text(5, *record.meta_json);
  } else {
    sqlite3_bind_null(insert.get(), 5);
  }
  // One statement is one transaction: it commits durably (WAL, synchronous=FULL) or not at all.
  if (sqlite3_step(insert.get()) != SQLITE_DONE) return io_error(m_db, "append");
  return {};
}

Result<MemoryPage> MemoryStore::query(const MemoryQuery& q) {
  if (auto valid = validate_namespace(q.ns); !valid) return valid.error();
  import_once(q.ns);
  MemoryPage page;
  const std::uint64_t limit = q.after ? q.after->remaining : q.limit.value_or(k_default_query_limit);
  if (limit == 0) return page;
  Statement select(m_db,
                   "SELECT seq, timestamp_ms, content, tags, meta FROM memory_records WHERE namespace = ?1 "
                   "AND timestamp_ms >= ?2 AND timestamp_ms <= ?3 "
                   "AND (?4 = 0 OR timestamp_ms < ?5 OR (timestamp_ms = ?5 AND seq > ?6)) "
                   "ORDER BY timestamp_ms DESC, seq ASC");
  if (!select.ok()) return io_error(m_db, "query");
  select.bind_text(1, q.ns);
  select.bind_int(2, q.since_ms.value_or(0));
  sqlite3_bind_int64(select.get(), 3,
                     q.until_ms ? static_cast<sqlite3_int64>(*q.until_ms) : std::numeric_limits<sqlite3_int64>::max());
  select.bind_int(4, q.after ? 1 : 0);
  select.bind_int(5, q.after ? q.after->timestamp_ms : 0);
  select.bind_int(6, q.after ? q.after->seq : 0);
  const std::string needle = q.content_contains ? lower_ascii(*q.content_contains) : std::string();
  std::size_t used = 2;  // the array's brackets
  MemoryCursor last;
  int rc;
  while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
    MemoryRecord r;
    r.ns = q.ns;
    const auto seq = static_cast<std::uint64_t>(sqlite3_column_int64(select.get(), 0));
    r.timestamp_ms = static_cast<std::uint64_t>(sqlite3_column_int64(select.get(), 1));
    r.content = column_text(select.get(), 2);
    if (q.content_contains && lower_ascii(r.content).find(needle) == std::string::npos) continue;
    r.tags = decode_tags(column_text(select.get(), 3));
    if (q.tag_prefix && std::none_of(r.tags.begin(), r.tags.end(), [&](const std::string& t) {
          return t.compare(0, q.tag_prefix->size(), *q.tag_prefix) == 0;
        })) {
      continue;
    }
    if (sqlite3_column_type(select.get(), 4) != SQLITE_NULL) {
      // A meta over the cap (stored before it, or imported) is not even copied.
      if (static_cast<std::size_t>(sqlite3_column_bytes(select.get(), 4)) <= k_max_meta_bytes) {
        r.meta_json = column_text(select.get(), 4);
      } else {
        r.truncated = true;
      }
    }
    cut_to_caps(r);
    const std::size_t bytes = record_json_bytes(r) + (page.records.empty() ? 0 : 1);  // and its comma
    if (!page.records.empty() && used + bytes > q.page_bytes) {
      page.next = MemoryCursor{last.timestamp_ms, last.seq, limit - page.records.size()};
      break;
    }
    used += bytes;
    last = MemoryCursor{r.timestamp_ms, seq, 0};
    page.records.push_back(std::move(r));
    if (page.records.size() >= limit) break;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return io_error(m_db, "query");
  return page;
}

void MemoryStore::import_once(const std::string& ns) {
  std::lock_guard lock(m_import_mutex);
  if (m_import_checked.count(ns) != 0) return;
  // A database that cannot be written cannot record the import either: its records are
  // what is answered.
  if (m_read_only && !m_in_memory) {
    m_import_checked.insert(ns);
    return;
  }
  {
    Statement done(m_db, "SELECT 1 FROM memory_imports WHERE namespace = ?1");
    if (!done.ok()) {
      util::log().warn("memory: cannot tell whether namespace '{}' was imported: {}", ns, sqlite3_errmsg(m_db));
      return;
    }
    done.bind_text(1, ns);
    if (sqlite3_step(done.get()) == SQLITE_ROW) {
      m_import_checked.insert(ns);
      return;
    }
  }
  const auto file = reference_file(m_path.parent_path(), ns);
  auto read = read_reference_records(file, ns);
  if (!read) {
    // Refused for this host's lifetime; a repaired file is imported by the next one.
    util::log().warn("memory: the reference's records of namespace '{}' are not imported: {}", ns,
                     read.error().message);
    m_import_checked.insert(ns);
    return;
  }
  if (!*read) {  // nothing to import (a file put there later is imported by the next host)
    m_import_checked.insert(ns);
    return;
  }
  if (auto imported = import_records(ns, file, (*read)->records, (*read)->skipped); !imported) {
    // Tried again at the namespace's next use.
    util::log().warn("memory: importing {} failed: {}", file.string(), imported.error().message);
    return;
  }
  m_import_checked.insert(ns);
}

Result<void> MemoryStore::import_records(const std::string& ns, const std::filesystem::path& file,
                                         const std::vector<MemoryRecord>& records, std::size_t skipped) {
  std::lock_guard lock(m_write_mutex);
  if (sqlite3_exec(m_db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) return io_error(m_db, "import");
  auto rollback = [&](std::string_view what) {
    Error e = io_error(m_db, what);
    sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    return e;
  };
  // Another host may have imported it since this one looked.
  int seen;
  {
    Statement done(m_db, "SELECT 1 FROM memory_imports WHERE namespace = ?1");
    if (!done.ok()) return rollback("import");
    done.bind_text(1, ns);
    seen = sqlite3_step(done.get());
  }
  if (seen == SQLITE_ROW) {
    if (sqlite3_exec(m_db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return rollback("import");
    return {};
  }
  if (seen != SQLITE_DONE) return rollback("import");
  {
    Statement insert(m_db,
                     "INSERT INTO memory_records(namespace, timestamp_ms, content, tags, meta) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!insert.ok()) return rollback("import");
    for (const auto& r : records) {
      sqlite3_reset(insert.get());
      insert.bind_text(1, r.ns);
      insert.bind_int(2, r.timestamp_ms);
      insert.bind_text(3, r.content);
      insert.bind_text(4, encode_tags(r.tags));
      if (r.meta_json) {
        insert.bind_text(5, *r.meta_json);
      } else {
        sqlite3_bind_null(insert.get(), 5);
      }
      if (sqlite3_step(insert.get()) != SQLITE_DONE) return rollback("import");
    }
  }
  {
    Statement mark(m_db,
                   "INSERT INTO memory_imports(namespace, file, records, skipped, imported_ms) VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!mark.ok()) return rollback("import");
    mark.bind_text(1, ns);
    mark.bind_text(2, file.string());
    mark.bind_int(3, records.size());
    mark.bind_int(4, skipped);
    mark.bind_int(5, now_ms());
    if (sqlite3_step(mark.get()) != SQLITE_DONE) return rollback("import");
  }
  if (sqlite3_exec(m_db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return rollback("import");
  util::log().info("memory: imported {} records of namespace '{}' from {} ({} lines skipped)", records.size(), ns,
                   file.string(), skipped);
  return {};
}

Result<std::vector<std::string>> MemoryStore::list_namespaces() const {
  Statement select(m_db, "SELECT DISTINCT namespace FROM memory_records ORDER BY namespace");
  if (!select.ok()) return io_error(m_db, "list namespaces");
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) out.push_back(column_text(select.get(), 0));
  if (rc != SQLITE_DONE) return io_error(m_db, "list namespaces");
  return out;
}

Result<std::string> MemoryStore::integrity_check() const {
  Statement check(m_db, "PRAGMA integrity_check");
  if (!check.ok()) return io_error(m_db, "integrity check");
  std::string report;
  while (sqlite3_step(check.get()) == SQLITE_ROW) {
    if (!report.empty()) report += '\n';
    report += column_text(check.get(), 0);
  }
  return report;
}

}  // namespace exthost::store
