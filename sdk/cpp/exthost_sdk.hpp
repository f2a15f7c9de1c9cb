// exthost_sdk.hpp — write an exthost extension in C++: one header, Boost.JSON, no Asio.
//
// An extension is a program that speaks JSON-RPC 2.0 on stdin/stdout with Content-Length
// framing (docs/protocol.md). This header does the framing, the dispatch by method, the
// replies and errors, notifications, requests to the host (memory.*, config.*), progress,
// shutdown and cancellation; you register handlers and call run():
//
//   exthost_sdk::Extension ext;
//   ext.tool("echo", "Echo text back", schema, [](exthost_sdk::Call& call) -> boost::json::value {
//     return {{"content", "echo: " + std::string(call.input().at("text").as_string())}};
//   });
//   return ext.run();
//
// Threads: a reader thread parses stdin; handlers run on a pool of worker threads
// (concurrency(), k_default_concurrency unless set, declared to the host in the initialize
// answer), so a hook is answered while a long tool runs, and a handler may block, call the
// host and send notifications. Handlers that share state must lock it, or the extension
// must set concurrency(1). Every frame is written whole under one lock, and only as valid
// UTF-8. A `$/cancelRequest` marks its request cancelled at once (Call::cancelled()).
// Never write to stdout yourself: it carries frames only; log to stderr.
//
// Link Boost.JSON (the Boost::json target), or include <boost/json/src.hpp> in one file.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace exthost_sdk {

namespace json = boost::json;

inline constexpr int k_protocol_version = 1;
// The host refuses frame bodies above 4 MiB; a reply that would be larger is answered as an
// error instead, and a larger frame from the host is skipped.
inline constexpr std::size_t k_max_frame_body = 4 * 1024 * 1024;
// The host refuses JSON nested deeper than this; such a reply is answered as an error.
inline constexpr std::size_t k_max_json_depth = 128;
// Nesting accepted from the host (its own limit, plus the envelopes around what it passes on).
inline constexpr std::size_t k_max_input_depth = 2 * k_max_json_depth;
// Header lines and whole headers from the host, as the host bounds ours.
inline constexpr std::size_t k_max_header_line = 1024;
inline constexpr std::size_t k_max_headers = 64 * 1024;
// Handlers running at once unless the extension says otherwise; the protocol's bounds.
inline constexpr unsigned k_default_concurrency = 8;
inline constexpr unsigned k_max_concurrency = 64;
// Call::progress() sends at most one $/progress per request in this interval.
inline constexpr std::chrono::milliseconds k_progress_min_interval{500};
// An error message longer than this is cut (it has to fit in a frame).
inline constexpr std::size_t k_max_error_message = 64 * 1024;

// JSON-RPC error codes.
inline constexpr int k_parse_error = -32700;
inline constexpr int k_invalid_request = -32600;
inline constexpr int k_method_not_found = -32601;
inline constexpr int k_invalid_params = -32602;
inline constexpr int k_server_error = -32000;
inline constexpr int k_request_cancelled = -32800;

// What a tool declares beyond its schema.
struct ToolOptions {
  // Running it twice does no more than running it once: after a crash mid-call the host
  // runs it again on the restarted extension. Other tools are never run twice; their
  // caller gets the crash instead.
  bool idempotent = false;
};

// Throw from a handler to answer with a JSON-RPC error {code, message}.
class ExtensionError : public std::runtime_error {
 public:
  explicit ExtensionError(const std::string& message, int code = k_server_error)
      : std::runtime_error(message), m_code(code) {}
  int code() const { return m_code; }

 private:
  int m_code;
};

// The host answered one of our requests with an error.
class HostError : public std::runtime_error {
 public:
  HostError(int code, const std::string& message) : std::runtime_error(message), m_code(code) {}
  int code() const { return m_code; }

 private:
  int m_code;
};

namespace detail {

// The length of the well-formed UTF-8 sequence at s[i], or 0 with `bad` set to the length
// of its longest ill-formed start (at least 1), which becomes one U+FFFD.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i, std::size_t& bad) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    bad = 1;
    return 0;
  }
  for (std::size_t k = 1; k < n; ++k) {
    if (i + k >= s.size() || byte(i + k) < lo || byte(i + k) > hi) {
      bad = k;
      return 0;
    }
    lo = 0x80;
    hi = 0xBF;
  }
  return n;
}

// The offset of the first byte that is not UTF-8, or npos.
inline std::size_t first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0, bad = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i, bad);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

// `s` with every ill-formed sequence replaced by U+FFFD.
inline std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0, bad = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i, bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

// What stands between a value and a frame the host accepts.
struct Scan {
  std::size_t depth = 0;  // nesting of arrays and objects; stops counting past the limit
  bool non_finite = false;
  bool invalid_utf8 = false;
};

inline void scan(const json::value& v, Scan& s, std::size_t depth = 0) {
  if (const double* d = v.if_double()) {
    if (!std::isfinite(*d)) s.non_finite = true;
  } else if (const json::string* str = v.if_string()) {
    if (!s.invalid_utf8 && first_invalid_utf8(*str) != std::string_view::npos) s.invalid_utf8 = true;
  } else if (const json::array* a = v.if_array()) {
    s.depth = std::max(s.depth, depth + 1);
    if (depth + 1 > k_max_json_depth) return;
    for (const auto& item : *a) scan(item, s, depth + 1);
  } else if (const json::object* o = v.if_object()) {
    s.depth = std::max(s.depth, depth + 1);
    if (depth + 1 > k_max_json_depth) return;
    for (const auto& [key, item] : *o) {
      if (!s.invalid_utf8 && first_invalid_utf8(key) != std::string_view::npos) s.invalid_utf8 = true;
      scan(item, s, depth + 1);
    }
  }
}

// A copy of `v` (nested at most k_max_json_depth) with every string and key made UTF-8.
inline json::value repaired(const json::value& v) {
  if (const json::string* str = v.if_string()) return json::string(utf8_lossy(*str));
  if (const json::array* a = v.if_array()) {
    json::array out;
    out.reserve(a->size());
    for (const auto& item : *a) out.push_back(repaired(item));
    return out;
  }
  if (const json::object* o = v.if_object()) {
    json::object out;
    for (const auto& [key, item] : *o) out[utf8_lossy(key)] = repaired(item);
    return out;
  }
  return v;
}

// Splits a descriptor's bytes into frame bodies.
class FrameReader {
 public:
  enum class Kind { body, oversized, end, lost };
  struct Frame {
    Kind kind = Kind::end;
    std::string body;         // Kind::body
    std::size_t length = 0;   // Kind::oversized: its Content-Length (the body was skipped)
    std::string problem;      // Kind::lost: why the input cannot be split any more
  };

  explicit FrameReader(int fd) : m_fd(fd) {}

  Frame next() {
    std::optional<std::size_t> length;
    bool seen = false;
    std::size_t header_bytes = 0;
    for (;;) {
      std::string line;
      if (!read_line(line)) {
        if (m_problem.empty() && (seen || !m_buffer.empty())) m_problem = "the input ended inside a header";
        return m_problem.empty() ? Frame{} : lost(m_problem);
      }
      header_bytes += line.size();
      if (header_bytes > k_max_headers) return lost("headers over " + std::to_string(k_max_headers) + " bytes");
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty()) {
        if (!seen) continue;  // blank lines between frames
        if (!length) return lost("a frame without Content-Length");
        break;
      }
      seen = true;
      const auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      while (!name.empty() && name.back() == ' ') name.pop_back();
      if (colon == std::string::npos || name != "content-length") continue;
      std::string_view value = std::string_view(line).substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string_view::npos) {
        return lost("Content-Length \"" + utf8_lossy(value) + "\"");
      }
      length = std::stoull(std::string(value));
    }
    if (*length > k_max_frame_body) {
      for (std::size_t left = *length; left > 0;) {
        if (m_buffer.empty() && !fill()) return lost("the input ended inside a frame");
        const std::size_t taken = std::min(left, m_buffer.size());
        m_buffer.erase(0, taken);
        left -= taken;
      }
      return Frame{Kind::oversized, {}, *length, {}};
    }
    while (m_buffer.size() < *length) {
      if (!fill()) return lost("the input ended inside a frame");
    }
    Frame f{Kind::body, m_buffer.substr(0, *length), 0, {}};
    m_buffer.erase(0, *length);
    return f;
  }

 private:
  static Frame lost(std::string problem) { return Frame{Kind::lost, {}, 0, std::move(problem)}; }

  bool fill() {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::read(m_fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      m_buffer.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
  }

  // One line, its ending included; false at the end of the input or when it is too long.
  bool read_line(std::string& line) {
    for (std::size_t searched = 0;;) {
      const auto end = m_buffer.find('\n', searched);
      if (end != std::string::npos) {
        if (end + 1 > k_max_header_line) {
          m_problem = "a header line of " + std::to_string(end + 1) + " bytes";
          return false;
        }
        line = m_buffer.substr(0, end + 1);
        m_buffer.erase(0, end + 1);
        return true;
      }
      if (m_buffer.size() > k_max_header_line) {
        m_problem = "a header line over " + std::to_string(k_max_header_line) + " bytes";
        return false;
      }
      searched = m_buffer.size();
      if (!fill()) return false;
    }
  }

  int m_fd;
  std::string m_buffer;
  std::string m_problem;
};

inline void log(const std::string& line) { std::fprintf(stderr, "exthost_sdk: %s\n", line.c_str()); }

}  // namespace detail

class Extension;

// What a request's Call, the table of requests in flight and the reader share.
struct CallState {
  std::atomic<bool> cancelled{false};
  std::mutex mutex;  // orders progress before the reply
  bool answered = false;
  std::optional<std::chrono::steady_clock::time_point> last_progress;
};

// One request being handled.
class Call {
 public:
  Call(Extension& ext, json::value id, std::string method, json::value params,
       std::shared_ptr<CallState> state = std::make_shared<CallState>())
      : m_ext(ext), m_id(std::move(id)), m_method(std::move(method)), m_params(std::move(params)),
        m_state(std::move(state)) {
    if (!m_params.is_object()) m_params = json::object();
  }
  const json::value& id() const { return m_id; }
  const std::string& method() const { return m_method; }
  const json::object& params() const { return m_params.get_object(); }
  // params.input, or an empty object.
  json::value input() const {
    const auto* v = params().if_contains("input");
    return v && !v->is_null() ? *v : json::value(json::object());
  }
  // True once the host sent $/cancelRequest for this request (or the extension is stopping).
  bool cancelled() const { return m_state->cancelled.load(); }
  // Tells the host this request is still alive ($/progress), which restarts its idle
  // deadline. At most one per k_progress_min_interval is sent, none once answered; returns
  // whether one was sent. command.output and provider.stream.event count already.
  bool progress() const;

  // command.invoke output, tied to this invocation's request_id.
  void output(json::object event) const;
  void text(const std::string& content) const { output({{"kind", "text"}, {"content", content}}); }
  void system(const std::string& content) const { output({{"kind", "system"}, {"content", content}}); }
  void error(const std::string& content) const { output({{"kind", "error"}, {"content", content}}); }
  void table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) const {
    json::array h(headers.begin(), headers.end());
    json::array r;
    for (const auto& row : rows) r.push_back(json::array(row.begin(), row.end()));
    output({{"kind", "table"}, {"headers", std::move(h)}, {"rows", std::move(r)}});
  }
  void done() const { output({{"kind", "done"}}); }
  // provider.stream: one stream event ({"type": "text", "text": …}).
  void stream(json::object event) const;

 private:
  Extension& m_ext;
  json::value m_id;
  std::string m_method;
  json::value m_params;
  std::shared_ptr<CallState> m_state;
};

class Extension {
 public:
  using Handler = std::function<json::value(Call&)>;
  using CommandHandler = std::function<json::value(Call&, const std::vector<std::string>& args)>;

  // Serves on `in_fd` / `out_fd` (stdin and stdout by default).
  explicit Extension(int in_fd = 0, int out_fd = 1, bool cancellation = true)
      : m_in(in_fd), m_out(out_fd), m_cancellation(cancellation) {}
  Extension(const Extension&) = delete;
  Extension& operator=(const Extension&) = delete;

  // --- registration -----------------------------------------------------------------

  void tool(std::string name, std::string description, json::value input_schema, Handler handler,
            ToolOptions options = {}) {
    json::object spec{{"name", name}, {"description", std::move(description)}, {"input_schema", std::move(input_schema)}};
    if (options.idempotent) spec["idempotent"] = true;
    m_tool_specs.push_back(std::move(spec));
    m_tools[std::move(name)] = std::move(handler);
  }
  // hook.handle for `kind`; return {"action": …}, or null to continue.
  void hook(std::string kind, Handler handler) { m_hooks[std::move(kind)] = std::move(handler); }
  // command.invoke for `name`; null answers {"status": "ok"}.
  void command(std::string name, CommandHandler handler) { m_commands[std::move(name)] = std::move(handler); }
  // A model provider ({id, display_name, description, models}) and its handlers.
  void provider(json::object spec, Handler complete, Handler stream = {}) {
    m_providers.push_back(std::move(spec));
    if (complete) m_methods["provider.complete"] = std::move(complete);
    if (stream) m_methods["provider.stream"] = std::move(stream);
  }
  void capability(std::string kind, std::string name, std::vector<std::string> permissions = {}) {
    m_capabilities.push_back(json::object{{"kind", std::move(kind)}, {"name", std::move(name)},
                                          {"permissions", json::array(permissions.begin(), permissions.end())}});
  }
  // Any other request method (info.get, settings.editor.*, …).
  void method(std::string name, Handler handler) { m_methods[std::move(name)] = std::move(handler); }
  // Runs inside initialize, after the config arrived (it may call the host).
  void on_initialize(std::function<void(Call&)> handler) { m_on_initialize = std::move(handler); }
  // How many handlers may run at once (1 to k_max_concurrency; 1 runs them one by one, in
  // arrival order); declared in the initialize answer. Set it before run().
  void concurrency(unsigned n) {
    if (n < 1 || n > k_max_concurrency) {
      throw std::invalid_argument("concurrency must be from 1 to " + std::to_string(k_max_concurrency) + ", got " +
                                  std::to_string(n));
    }
    m_concurrency = n;
  }
  unsigned concurrency() const { return m_concurrency; }

  const std::string& plugin_id() const { return m_plugin_id; }
  const std::string& plugin_root() const { return m_plugin_root; }
  const json::object& config() const { return m_config; }

  // --- talking to the host ----------------------------------------------------------

  void notify(const std::string& method, json::value params) {
    write_frame(encode(json::object{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}},
                       "a " + method + " notification"));
  }
  void task_start(const std::string& id, const std::string& label, const std::string& kind = "generic") {
    notify("task.start", json::object{{"id", id}, {"label", label}, {"kind", kind}});
  }
  void task_update(const std::string& id, std::optional<std::uint64_t> current, std::optional<std::uint64_t> total = {},
                   std::optional<std::string> message = {}) {
    json::object p{{"id", id}};
    if (current) p["current"] = *current;
    if (total) p["total"] = *total;
    if (message) p["message"] = *message;
    notify("task.update", std::move(p));
  }
  void task_log(const std::string& id, const std::string& line) {
    notify("task.log", json::object{{"id", id}, {"line", line}});
  }
  void task_done(const std::string& id, std::optional<std::string> error = {}) {
    json::object p{{"id", id}};
    if (error) p["error"] = *error;
    notify("task.done", std::move(p));
  }

  // Sends a request to the host and waits for its result; throws HostError.
  json::value request(const std::string& method, json::value params) {
    auto waiter = std::make_shared<Waiter>();
    std::string id;
    {
      std::lock_guard lock(m_shared->mutex);
      if (m_shared->closed) throw HostError(k_server_error, "the host closed the connection");
      id = "ext-" + std::to_string(++m_shared->next_id);
      m_shared->waiters[id] = waiter;
    }
    try {
      write_frame(encode(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}},
                         "a " + method + " request"));
    } catch (...) {
      std::lock_guard lock(m_shared->mutex);
      m_shared->waiters.erase(id);
      throw;
    }
    std::unique_lock lock(m_shared->mutex);
    m_shared->changed.wait(lock, [&] { return waiter->reply.has_value() || m_shared->closed; });
    m_shared->waiters.erase(id);
    if (!waiter->reply) throw HostError(k_server_error, "the host closed the connection");
    const json::object& reply = waiter->reply->get_object();
    if (const auto* e = reply.if_contains("error"); e != nullptr && !e->is_null()) {
      const auto* eo = e->if_object();
      const auto* code = eo ? eo->if_contains("code") : nullptr;
      const auto* message = eo ? eo->if_contains("message") : nullptr;
      throw HostError(code && code->is_int64() ? static_cast<int>(code->as_int64()) : k_server_error,
                      message && message->is_string() ? std::string(message->get_string()) : "host error");
    }
    const auto* result = reply.if_contains("result");
    return result ? *result : json::value(nullptr);
  }
  json::value memory_append(const std::string& content, std::vector<std::string> tags = {},
                            std::optional<json::value> meta = {}) {
    json::object p{{"namespace", m_plugin_id}, {"content", content}, {"tags", json::array(tags.begin(), tags.end())}};
    if (meta) p["meta"] = *meta;
    return request("memory.append", std::move(p));
  }
  // Every record the query matches (up to "limit", default 50), newest first: the host's
  // pages one after another.
  json::array memory_query(json::object filters = {}) {
    json::array records;
    std::optional<std::string> cursor;
    for (;;) {
      json::object page = memory_query_page(filters, cursor);
      for (auto& r : page.at("records").as_array()) records.push_back(std::move(r));
      const json::value& next = page.at("next_cursor");
      if (!next.is_string()) return records;
      if (cursor && *cursor == next.get_string()) {
        throw HostError(k_server_error, "the host answered memory.query with the same cursor again");
      }
      cursor = std::string(next.get_string());
    }
  }
  // One page of a query: {"records": [...], "next_cursor": <string or null>}. Pass a
  // next_cursor back, with the same filters, for the page after it.
  json::object memory_query_page(json::object filters = {}, std::optional<std::string> cursor = {}) {
    filters["namespace"] = m_plugin_id;
    if (cursor) filters["cursor"] = *cursor;
    json::value page = request("memory.query", std::move(filters));
    json::object* o = page.if_object();
    if (o == nullptr || !o->contains("records") || !o->at("records").is_array()) {
      throw HostError(k_server_error, "the host answered memory.query without records");
    }
    if (!o->contains("next_cursor")) (*o)["next_cursor"] = nullptr;
    return std::move(*o);
  }
  std::optional<std::string> config_get(const std::string& key) {
    auto v = request("config.get", json::object{{"key", key}});
    const auto& value = v.at("value");
    return value.is_string() ? std::optional<std::string>(std::string(value.get_string())) : std::nullopt;
  }
  void config_set(const std::string& key, const std::string& value) {
    request("config.set", json::object{{"key", key}, {"value", value}});
  }

  // --- serving ----------------------------------------------------------------------

  // Serves until shutdown or the end of the input; returns the exit status (0).
  //
  // On shutdown (or at the end of the input) every request still in flight is marked
  // cancelled, shutdown is answered at once, requests not started yet are answered as
  // cancelled, and run() returns when every running handler has returned.
  int run() {
    // The reader shares only m_shared with us, and reads its own duplicate of the input, so
    // it may outlive this object (and the caller's descriptor) safely.
    const int own = ::dup(m_in);
    std::thread reader([in = own >= 0 ? own : m_in, own, shared = m_shared] {
      read_loop(in, shared);
      if (own >= 0) ::close(own);
    });
    std::vector<std::thread> workers;
    for (unsigned i = 0; i < m_concurrency; ++i) workers.emplace_back([this] { work_loop(); });
    std::optional<Pending> shutdown;
    {
      std::unique_lock lock(m_shared->mutex);
      m_shared->changed.wait(lock, [&] { return m_shared->shutdown.has_value() || m_shared->closed; });
      m_shared->stopping = true;
      for (auto& [key, state] : m_shared->in_flight) state->cancelled = true;
      shutdown = std::move(m_shared->shutdown);
      m_shared->shutdown.reset();
    }
    if (shutdown) serve(*shutdown);
    {
      std::lock_guard lock(m_shared->mutex);
      m_shared->workers_stop = true;
      m_shared->changed.notify_all();
    }
    for (auto& w : workers) w.join();
    // At the end of the input the reader has finished; after shutdown it may still wait for
    // input that will not come, and the process is about to exit: leave it.
    bool closed;
    {
      std::lock_guard lock(m_shared->mutex);
      closed = m_shared->closed;
    }
    if (closed) {
      reader.join();
    } else {
      reader.detach();
    }
    return 0;
  }

  // Whether the request with this id is in flight and was cancelled.
  bool is_cancelled(const json::value& id) {
    std::lock_guard lock(m_shared->mutex);
    auto it = m_shared->in_flight.find(json::serialize(id));
    return it != m_shared->in_flight.end() && it->second->cancelled.load();
  }

  // Writes any message as one frame; throws ExtensionError when the host would refuse it.
  void send(const json::value& message) { write_frame(encode(message, "a message")); }

 private:
  struct Pending {
    json::value id;
    std::string method;
    json::value params;
    std::shared_ptr<CallState> state;            // null for a refusal
    std::optional<std::pair<int, std::string>> refusal;  // answered with this error, unrun
  };
  struct Waiter {
    std::optional<json::value> reply;
  };
  // What the reader thread, the workers and the handlers share.
  struct Shared {
    std::mutex mutex;  // guards everything below
    std::condition_variable changed;
    std::deque<Pending> requests;  // to start, in arrival order
    std::map<std::string, std::shared_ptr<CallState>> in_flight;  // by serialized id: 7 and "7" differ
    std::map<std::string, std::shared_ptr<Waiter>> waiters;
    std::optional<Pending> shutdown;
    std::uint64_t next_id = 0;
    bool stopping = false;      // shutdown received or input ended: start nothing new
    bool workers_stop = false;  // workers end once the queue is empty
    bool closed = false;        // the input ended
  };

  // The frame body for `message`, or ExtensionError naming `what` and the problem. Strings
  // that are not UTF-8 are sent with U+FFFD in place of each ill-formed sequence.
  static std::string encode(const json::value& message, const std::string& what) {
    detail::Scan s;
    detail::scan(message, s);
    if (s.depth > k_max_json_depth) {
      throw ExtensionError("message nested deeper than " + std::to_string(k_max_json_depth) +
                           " levels, which the host refuses (" + what + ")");
    }
    if (s.non_finite) throw ExtensionError("message holds a number JSON cannot carry (infinite or NaN) (" + what + ")");
    std::string body = s.invalid_utf8 ? json::serialize(detail::repaired(message)) : json::serialize(message);
    if (body.size() > k_max_frame_body) {
      throw ExtensionError("message too large: " + std::to_string(body.size()) + " bytes, over the host's frame cap of " +
                           std::to_string(k_max_frame_body) + " bytes (" + what + ")");
    }
    return body;
  }

  // Writes one whole frame; frames never interleave. Once the host is gone, drops.
  void write_frame(const std::string& body) {
    const std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    std::lock_guard lock(m_write_mutex);
    if (m_output_broken) return;
    for (std::size_t off = 0; off < frame.size();) {
      const ssize_t n = ::write(m_out, frame.data() + off, frame.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        m_output_broken = true;  // the host is gone; the reader will see the end of input
        return;
      }
      off += static_cast<std::size_t>(n);
    }
  }

  void work_loop() {
    for (;;) {
      Pending next;
      {
        std::unique_lock lock(m_shared->mutex);
        m_shared->changed.wait(lock, [&] { return !m_shared->requests.empty() || m_shared->workers_stop; });
        if (m_shared->requests.empty()) return;
        next = std::move(m_shared->requests.front());
        m_shared->requests.pop_front();
      }
      serve(next);
    }
  }

  // Runs one request's handler and writes its reply; never throws.
  void serve(Pending& p) {
    json::value result;
    std::optional<std::pair<int, std::string>> error = p.refusal;
    if (!error && p.state && p.state->cancelled && p.method != "shutdown") {
      error.emplace(k_request_cancelled, p.method + " was cancelled before it started");
    }
    if (!error) {
      Call call(*this, p.id, p.method, std::move(p.params), p.state ? p.state : std::make_shared<CallState>());
      try {
        result = dispatch(call);
      } catch (const ExtensionError& e) {
        error.emplace(e.code(), e.what());
      } catch (const std::exception& e) {  // a bug in a handler must not kill the extension
        detail::log(p.method + " failed: " + e.what());
        error.emplace(k_server_error, p.method + " failed: " + e.what());
      } catch (...) {
        detail::log(p.method + " failed: an exception that is not a std::exception");
        error.emplace(k_server_error, p.method + " failed: an exception that is not a std::exception");
      }
    }
    if (p.state) {
      {
        std::lock_guard lock(p.state->mutex);
        p.state->answered = true;
      }
      // Before the reply goes out: what the handler did happens before the next request
      // that this reply makes the host send.
      std::lock_guard lock(m_shared->mutex);
      auto it = m_shared->in_flight.find(json::serialize(p.id));
      if (it != m_shared->in_flight.end() && it->second == p.state) m_shared->in_flight.erase(it);
    }
    reply(p.id, p.method, std::move(result), std::move(error));
  }

  void reply(const json::value& id, const std::string& method, json::value result,
             std::optional<std::pair<int, std::string>> error) {
    try {
      std::string body;
      if (!error) {
        try {
          body = encode(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}, "the result of " + method);
        } catch (const ExtensionError& e) {
          detail::log(e.what());
          error.emplace(e.code(), e.what());
        }
      }
      if (error) {
        std::string message = std::move(error->second);
        if (message.size() > k_max_error_message) message = message.substr(0, k_max_error_message) + "…";
        body = encode(json::object{{"jsonrpc", "2.0"},
                                   {"id", id},
                                   {"error", json::object{{"code", error->first}, {"message", std::move(message)}}}},
                      "the error reply to " + method);
      }
      write_frame(body);
    } catch (const std::exception& e) {
      detail::log("could not answer " + method + ": " + e.what());
    }
  }

  json::value dispatch(Call& call) {
    const std::string& m = call.method();
    const auto& p = call.params();
    auto text = [&](const char* key) {
      const auto* v = p.if_contains(key);
      return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    if (m == "initialize") {
      m_plugin_id = text("plugin_id");
      m_plugin_root = text("plugin_root");
      if (const auto* c = p.if_contains("config"); c && c->is_object()) m_config = c->get_object();
      if (m_on_initialize) m_on_initialize(call);
      json::object caps;
      caps["concurrency"] = m_concurrency;
      if (!m_tool_specs.empty()) caps["tools"] = m_tool_specs;
      if (!m_providers.empty()) caps["providers"] = m_providers;
      if (!m_capabilities.empty()) caps["capabilities"] = m_capabilities;
      if (!m_hooks.empty()) caps["hooks"] = true;
      if (m_cancellation) caps["cancellation"] = true;
      return json::object{{"protocol_version", k_protocol_version}, {"capabilities", std::move(caps)}};
    }
    if (m == "tool.call") {
      auto it = m_tools.find(text("name"));
      if (it == m_tools.end()) throw ExtensionError("unknown tool: " + text("name"), k_invalid_params);
      return it->second(call);
    }
    if (m == "hook.handle") {
      auto it = m_hooks.find(text("kind"));
      json::value answer = it == m_hooks.end() ? json::value(nullptr) : it->second(call);
      return answer.is_null() ? json::value(json::object{{"action", "continue"}}) : answer;
    }
    if (m == "command.invoke") {
      auto it = m_commands.find(text("command"));
      if (it == m_commands.end()) throw ExtensionError("unknown command: " + text("command"), k_method_not_found);
      std::vector<std::string> args;
      if (const auto* a = p.if_contains("args"); a && a->is_array()) {
        for (const auto& s : a->get_array()) {
          if (s.is_string()) args.emplace_back(s.get_string());
        }
      }
      json::value answer = it->second(call, args);
      return answer.is_null() ? json::value(json::object{{"status", "ok"}}) : answer;
    }
    if (auto it = m_methods.find(m); it != m_methods.end()) return it->second(call);
    if (m == "shutdown") return nullptr;
    throw ExtensionError("method not found: " + m, k_method_not_found);
  }

  static bool usable_id(const json::value& id) { return id.is_string() || id.is_number(); }

  // Hands a request to the workers, or a refusal to answer. Called with the lock held.
  static void accept(Shared& shared, Pending p) {
    if (shared.workers_stop) {
      detail::log("ignored request " + p.method + ": the extension has stopped");
      return;
    }
    if (!p.refusal && shared.stopping) {
      p.refusal.emplace(k_request_cancelled, p.method + " refused: the extension is shutting down");
    }
    if (!p.refusal) {
      const std::string key = json::serialize(p.id);
      if (shared.in_flight.count(key) != 0) {
        p.refusal.emplace(k_invalid_request, p.method + " refused: request id " + key + " is already in flight");
      } else {
        p.state = std::make_shared<CallState>();
        shared.in_flight[key] = p.state;
        if (p.method == "shutdown") {  // answered by run() at once, whatever the workers do
          shared.stopping = true;
          shared.shutdown = std::move(p);
          shared.changed.notify_all();
          return;
        }
      }
    }
    shared.requests.push_back(std::move(p));
    shared.changed.notify_all();
  }

  // A frame body that is not JSON: refused when it is a request with an id to answer.
  static void on_unparsable(std::string_view body, const boost::system::error_code& ec, Shared& shared) {
    const std::size_t bad = detail::first_invalid_utf8(body);
    if (bad == std::string_view::npos) {
      detail::log("dropped a frame that is not JSON: " + ec.message());
      return;
    }
    const std::string problem = "invalid UTF-8 at byte " + std::to_string(bad) + " of the frame body";
    boost::system::error_code lossy_ec;
    json::parse_options options;
    options.max_depth = k_max_input_depth;
    const json::value v = json::parse(detail::utf8_lossy(body), lossy_ec, {}, options);
    const json::object* o = lossy_ec ? nullptr : v.if_object();
    const json::value* method = o ? o->if_contains("method") : nullptr;
    const json::value* id = o ? o->if_contains("id") : nullptr;
    std::lock_guard lock(shared.mutex);
    if (o && method == nullptr && id && id->is_string()) {
      auto it = shared.waiters.find(std::string(id->get_string()));
      if (it != shared.waiters.end()) {
        it->second->reply = json::object{{"error", {{"code", k_parse_error}, {"message", "the host's reply holds " + problem}}}};
        shared.waiters.erase(it);
        shared.changed.notify_all();
        return;
      }
    }
    if (method && method->is_string() && id && usable_id(*id)) {
      const std::string name(method->get_string());
      detail::log("refused request " + name + ": " + problem);
      accept(shared, Pending{*id, name, nullptr, nullptr, std::pair<int, std::string>(k_parse_error, "request " + name + " refused: " + problem)});
      return;
    }
    detail::log("dropped a frame without a usable id: " + problem);
  }

  static void on_frame(const std::string& body, Shared& shared) {
    boost::system::error_code ec;
    json::parse_options options;
    options.max_depth = k_max_input_depth;
    json::value v = json::parse(body, ec, {}, options);
    if (ec) {
      on_unparsable(body, ec, shared);
      return;
    }
    json::object* o = v.if_object();
    if (o == nullptr) {
      detail::log("dropped a frame that is not a JSON object");
      return;
    }
    const json::value* method = o->if_contains("method");
    const json::value* id = o->if_contains("id");
    std::lock_guard lock(shared.mutex);
    if (method == nullptr) {  // a reply to one of our requests
      if (id == nullptr || !id->is_string()) return;
      auto it = shared.waiters.find(std::string(id->get_string()));
      if (it == shared.waiters.end()) return;
      it->second->reply = std::move(v);
      shared.waiters.erase(it);
      shared.changed.notify_all();
    } else if (id == nullptr || id->is_null()) {  // a notification
      if (*method == "$/cancelRequest") {
        const auto* params = o->if_contains("params");
        const auto* target = params && params->is_object() ? params->get_object().if_contains("id") : nullptr;
        if (target && usable_id(*target)) {
          // An id not in flight (answered, or never seen) is ignored.
          auto it = shared.in_flight.find(json::serialize(*target));
          if (it != shared.in_flight.end()) it->second->cancelled = true;
        }
      }
    } else if (!usable_id(*id)) {
      detail::log("dropped a request whose id is neither a string nor a number");
    } else if (!method->is_string()) {
      accept(shared, Pending{*id, "request", nullptr, nullptr,
                             std::pair<int, std::string>(k_invalid_request, "invalid request: method must be a string")});
    } else {
      const auto* params = o->if_contains("params");
      accept(shared, Pending{*id, std::string(method->get_string()), params ? *params : json::value(), nullptr, std::nullopt});
    }
  }

  static void read_loop(int in, std::shared_ptr<Shared> shared) {
    detail::FrameReader frames(in);
    for (;;) {
      auto frame = frames.next();
      if (frame.kind == detail::FrameReader::Kind::end) break;
      if (frame.kind == detail::FrameReader::Kind::lost) {
        detail::log("the input lost its framing (" + frame.problem + "); reading stops");
        break;
      }
      if (frame.kind == detail::FrameReader::Kind::oversized) {
        detail::log("skipped a frame of " + std::to_string(frame.length) + " bytes (over the " +
                    std::to_string(k_max_frame_body) + "-byte cap)");
        continue;
      }
      try {
        on_frame(frame.body, *shared);
      } catch (const std::exception& e) {  // whatever a frame holds, the reader goes on
        detail::log(std::string("dropped a frame that could not be handled: ") + e.what());
      }
    }
    std::lock_guard lock(shared->mutex);
    shared->closed = true;
    shared->changed.notify_all();
  }

  int m_in, m_out;
  bool m_cancellation;
  unsigned m_concurrency = k_default_concurrency;
  json::array m_tool_specs, m_providers, m_capabilities;
  std::map<std::string, Handler> m_tools, m_hooks, m_methods;
  std::map<std::string, CommandHandler> m_commands;
  std::function<void(Call&)> m_on_initialize;
  std::string m_plugin_id, m_plugin_root;
  json::object m_config;

  std::mutex m_write_mutex;  // one frame at a time on the output
  bool m_output_broken = false;  // guarded by m_write_mutex
  std::shared_ptr<Shared> m_shared = std::make_shared<Shared>();
};

inline bool Call::progress() const {
  std::lock_guard lock(m_state->mutex);
  const auto now = std::chrono::steady_clock::now();
  if (m_state->answered) return false;
  if (m_state->last_progress && now - *m_state->last_progress < k_progress_min_interval) return false;
  m_state->last_progress = now;
  m_ext.notify("$/progress", json::object{{"id", m_id}});
  return true;
}

inline void Call::output(json::object event) const {
  const auto* rid = params().if_contains("request_id");
  m_ext.notify("command.output", json::object{{"request_id", rid ? *rid : json::value(nullptr)}, {"event", std::move(event)}});
}

inline void Call::stream(json::object event) const { m_ext.notify("provider.stream.event", std::move(event)); }

}  // namespace exthost_sdk
