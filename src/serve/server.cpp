// serve/server.cpp — `exthost serve`: requests in, Host calls, replies and stream
// notifications out.
//
// The reading thread watches the input and the stop descriptor together and hands each
// request to a thread of its own. While k_max_serve_in_flight requests run, it keeps
// reading a little (requests wait parsed, up to k_max_held_bytes of them) so that a
// "$/cancelRequest" still gets through; past that, or while the output queue is at its
// budget, it reads no further, so a client that floods requests, or stops reading, is
// slowed rather than buffered. Each running request has a stop source, found by its id
// (RunningRequests), which a "$/cancelRequest" naming that id requests: the Host's call
// then ends at once with ErrorKind::cancelled. Every frame goes out through the
// OutputWriter's thread; a stream's events cross from the host's I/O thread through a
// StreamRelay, so nothing here ever holds the I/O thread. Stopping (end of input,
// host.shutdown, a byte on stop_fd) cancels what runs instead of waiting for it.
#include "exthost/serve.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <variant>

#include "exthost/json_text.hpp"
#include "serve/output_writer.hpp"
#include "serve/reply.hpp"
#include "serve/request_id.hpp"
#include "serve/running_requests.hpp"
#include "serve/stream_relay.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/frame_parser.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace json = boost::json;
namespace {

// JSON-RPC's own codes, then one per ErrorKind, then the server's own (docs/serve.md).
constexpr int k_parse_error = -32700;
constexpr int k_invalid_request = -32600;
constexpr int k_method_not_found = -32601;
constexpr int k_invalid_params = -32602;
constexpr int k_internal_error = -32603;
constexpr int k_manifest_error = -32001;
constexpr int k_extension_error = -32002;
constexpr int k_timeout_error = -32003;
constexpr int k_output_error = -32004;  // the client did not read its output in time
constexpr int k_request_cancelled = -32800;  // the client cancelled it (LSP's code)

// Bytes taken from the input at once.
constexpr std::size_t k_input_chunk = 64 * 1024;
// Body bytes of requests that may wait parsed while every in-flight slot is taken; past
// that (and at least one request) the input is no longer read.
constexpr std::size_t k_max_held_bytes = 1024 * 1024;
// The client's notification that cancels one of its requests (LSP's name).
constexpr std::string_view k_cancel_method = "$/cancelRequest";
// The message of every reply to a cancelled request.
constexpr std::string_view k_cancelled_message = "request cancelled";
// While stopping, how long to wait for the request threads between two rounds of
// Host::shutdown_all(): a request that started a call after one round is cancelled by the
// next, so no call outlives the stop.
constexpr std::chrono::milliseconds k_stop_round{200};

int code_for(ErrorKind k) {
  switch (k) {
    case ErrorKind::usage: return k_invalid_params;
    case ErrorKind::manifest: return k_manifest_error;
    case ErrorKind::extension: return k_extension_error;
    case ErrorKind::timeout: return k_timeout_error;
    case ErrorKind::internal: return k_internal_error;
    case ErrorKind::cancelled: return k_request_cancelled;
  }
  return k_internal_error;
}

std::string kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::usage: return "usage";
    case ErrorKind::manifest: return "manifest";
    case ErrorKind::extension: return "extension";
    case ErrorKind::timeout: return "timeout";
    case ErrorKind::internal: return "internal";
    case ErrorKind::cancelled: return "cancelled";
  }
  return "internal";
}

std::string mib(std::size_t bytes) { return std::to_string(bytes / (1024 * 1024)) + " MiB"; }

// A failed request: its code and kind, and the Error (its message, naming the extension as
// the host's own texts do; its cause; the extension concerned when known; the extension's
// own error code and data). `output`: what a cancelled command had collected, as JSON text.
struct Failure {
  int code = k_internal_error;
  std::string kind = "internal";
  Error error;
  std::optional<std::string> output;

  explicit Failure(Error e) : code(code_for(e.kind)), kind(kind_name(e.kind)), error(std::move(e)) {}
  Failure(int c, std::string k, Error e) : code(c), kind(std::move(k)), error(std::move(e)) {}
};

// A successful answer: a JSON text, or {"<key>": JSON text} with a key.
struct Answer {
  std::string json;
  std::string key;
};

// A request's answer, or its failure.
using Reply = std::variant<Answer, Failure>;

struct Request {
  std::string raw_id;  // the id's bytes as they came
  std::string method;
  json::value params;
  std::string key;        // how a cancel names it (RunningRequests)
  std::size_t bytes = 0;  // its body's size, while it waits parsed
  std::optional<server::RunningRequests::Handle> running;  // set while it runs
};

Reply wrapped(Result<std::string> r, std::string key) {
  if (!r) return Failure{std::move(r).error()};
  return Answer{std::move(r).value(), std::move(key)};
}

// The reply to a request its client cancelled.
Failure cancelled_failure() { return Failure{Error::cancelled(std::string(k_cancelled_message))}; }

const json::string* str(const json::value& params, std::string_view key) {
  const auto* o = params.if_object();
  const auto* v = o ? o->if_contains(key) : nullptr;
  return v ? v->if_string() : nullptr;
}

const json::value* member(const json::value& params, std::string_view key) {
  const auto* o = params.if_object();
  return o ? o->if_contains(key) : nullptr;
}

Failure missing(std::string_view key) {
  return Failure{Error::usage("missing or invalid '" + std::string(key) + "' parameter")
                     .because(ErrorCause::invalid_request)};
}

// Whether the request names an extension by its `id` parameter.
bool names_extension_by_id(const std::string& method) {
  return !(method == "host.load" || method == "host.discover" || method == "host.list" || method == "host.tools" ||
           method == "tool.call" || method == "hook.emit" || method == "session.start" || method == "session.end");
}

// A failure whose message names the extension when there is one.
Failure server_failure(int code, std::string kind, ErrorKind error_kind, ErrorCause cause, const std::string& extension,
                       const std::string& text) {
  const std::string message = extension.empty() ? text : "Extension '" + extension + "': " + text;
  return Failure{code, std::move(kind), Error{error_kind, message, cause}.from(extension)};
}

Failure over_cap(const std::string& extension, std::string_view what, std::size_t bytes) {
  const bool ext = !extension.empty();
  return server_failure(ext ? k_extension_error : k_internal_error, ext ? "extension" : "internal",
                        ext ? ErrorKind::extension : ErrorKind::internal, ErrorCause::output_limit, extension,
                        std::string(what) + " of " + std::to_string(bytes) + " bytes exceeds the " +
                            mib(server::k_max_output_body) + " frame cap");
}

// A JSON text the host produced, as a value (null if it is not one after all).
json::value parsed_text(const std::string& text) {
  wire::JsonParser parser;
  auto v = parser.parse(text);
  return v ? std::move(v).value() : json::value(nullptr);
}

bool known(const std::string& method) {
  static const char* const k_methods[] = {
      "host.load",  "host.unload",   "host.reload",    "host.discover",     "host.list",
      "host.tools", "host.health",   "host.stats",     "host.config",       "host.shutdown",
      "tool.call",  "hook.emit",     "command.invoke", "provider.complete", "provider.stream",
      "info.get",   "session.start", "session.end"};
  for (const char* m : k_methods) {
    if (method == m) return true;
  }
  return false;
}

// An eventfd that wakes the reading thread: a request ended, the output has room again,
// the stop finished.
class Wakeup {
 public:
  Wakeup() : m_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Wakeup() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  int fd() const { return m_fd; }
  void notify() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(m_fd, &one, sizeof one);
  }
  void drain() const {
    std::uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(m_fd, &count, sizeof count);
  }

 private:
  int m_fd;
};

// Joins a thread when the scope ends, however it ends.
struct JoinOnExit {
  std::thread& thread;
  ~JoinOnExit() {
    if (thread.joinable()) thread.join();
  }
};

class Server {
 public:
  explicit Server(const ServeOptions& o)
      : m_options(o),
        m_host(o.host),
        m_writer(o.output_fd, [this] { m_wakeup.notify(); }),
        m_running(static_cast<std::size_t>(k_max_serve_in_flight)) {
    m_stop_watched = o.stop_fd >= 0;
  }

  int run() {
    int status = 0;
    try {
      status = read_requests();
    } catch (const std::exception& e) {
      util::log().error("serve: reading requests failed: {}", e.what());
      status = 1;
    } catch (...) {
      util::log().error("serve: reading requests failed");
      status = 1;
    }
    stop();
    return status;
  }

 private:
  // --- reading -------------------------------------------------------------------------

  // Whether a request may start now: a slot is free (the output's room is asked apart).
  bool slot_free() {
    std::lock_guard lock(m_mutex);
    return m_active < k_max_serve_in_flight;
  }

  // Whether another frame may be read and parsed: the output has room, and the requests
  // waiting for a slot are below k_max_held_bytes.
  bool may_read() { return m_held_bytes < k_max_held_bytes && m_writer.accepting(); }

  // Starts the requests that wait for a slot, in order, while slots are free.
  void start_held() {
    while (!m_held.empty() && slot_free() && m_writer.accepting()) {
      Request r = std::move(m_held.front());
      m_held.pop_front();
      m_held_bytes -= r.bytes;
      start(std::move(r));
    }
  }

  // Reads and starts requests until the input ends, host.shutdown arrives or stop_fd is
  // readable. Returns 1 when the input broke the framing, else 0.
  int read_requests() {
    wire::FrameParser parser("serve client");
    std::string input;          // bytes read and not yet parsed, from input_offset on
    std::size_t input_offset = 0;
    bool input_open = true;
    for (;;) {
      start_held();
      while (input_offset < input.size() && may_read()) {
        auto step = parser.feed(std::string_view(input).substr(input_offset));
        input_offset += step.consumed;
        if (step.error) {
          m_writer.push_now(server::error_frame(server::k_null_id, k_parse_error, "Parse error: " + *step.error));
          return 1;
        }
        if (step.body) handle_frame(std::string(*step.body));
        if (m_stop_requested) return 0;
      }
      if (input_offset == input.size()) {
        input.clear();
        input_offset = 0;
        // Requests still waiting for a slot run before the end of the input stops the server.
        if (!input_open && m_held.empty()) {
          if (auto err = parser.finish()) {
            util::log().warn("serve: {}", *err);
            return 1;
          }
          return 0;
        }
      }
      const bool read_input = input_open && input.empty() && may_read();
      // Held back (the client reads nothing), the input is still watched for its end: a
      // client that closes its side of the pipe is gone, and the server stops, whatever it
      // had not read yet (POLLHUP comes with no event asked for).
      pollfd fds[3] = {{m_wakeup.fd(), POLLIN, 0}, {m_stop_watched ? m_options.stop_fd : -1, POLLIN, 0},
                       {input_open ? m_options.input_fd : -1, static_cast<short>(read_input ? POLLIN : 0), 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        util::log().error("serve: waiting for input failed: {}", util::os_error_text(errno));
        return 1;
      }
      if (fds[0].revents != 0) m_wakeup.drain();
      if (fds[1].revents != 0 && read_stop_bytes()) return 0;
      if (fds[2].revents != 0 && !read_input) {
        if ((fds[2].revents & (POLLHUP | POLLERR)) != 0) {
          util::log().warn("serve: the client closed its input while its replies were unread; stopping");
          return 0;
        }
        continue;
      }
      if (fds[2].revents != 0) {
        input.resize(k_input_chunk);
        const ssize_t n = ::read(m_options.input_fd, input.data(), input.size());
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
          input.clear();
          continue;
        }
        if (n < 0) util::log().warn("serve: reading the input failed: {}", util::os_error_text(errno));
        input.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        if (n <= 0) input_open = false;
      }
    }
  }

  // Takes what stop_fd holds: its first byte (or its end) asks to stop, each later byte to
  // kill every extension. True when a stop was asked for now.
  bool read_stop_bytes() {
    char bytes[64];
    const ssize_t n = ::read(m_options.stop_fd, bytes, sizeof bytes);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return false;
      util::log().warn("serve: reading stop_fd failed: {}; it is no longer watched", util::os_error_text(errno));
      m_stop_watched = false;
      return false;
    }
    const bool first = m_stop_bytes == 0;
    if (n == 0) {  // its end: no byte will follow; as the first event, a stop
      m_stop_watched = false;
      if (first) m_stop_bytes = 1;
      return first;
    }
    m_stop_bytes += static_cast<std::uint64_t>(n);
    m_kills_pending += static_cast<std::uint64_t>(n) - (first ? 1 : 0);
    return first;
  }

  void handle_frame(std::string body) {
    Request r{std::string(server::k_null_id), {}, {}, {}, body.size(), std::nullopt};
    try {
      // Kept: an id beyond the double range is echoed as its bytes; params holding such a
      // number are refused below.
      wire::JsonParser parser(wire::JsonParser::OutOfRange::keep);
      auto v = parser.parse(body);
      if (!v) {
        m_writer.push_now(server::error_frame(server::k_null_id, k_parse_error, "Parse error: " + v.error().message));
        return;
      }
      const auto* o = v->if_object();
      const json::value* method = o ? o->if_contains("method") : nullptr;
      const json::value* id = o ? o->if_contains("id") : nullptr;
      const bool id_valid = id != nullptr && (id->is_string() || id->is_number());
      if (id_valid) {
        const auto raw = server::raw_member(body, "id");
        r.raw_id = raw ? std::string(*raw) : json::serialize(*id);
        r.key = id->is_string() ? server::string_id_key(id->get_string()) : server::number_id_key(r.raw_id);
      }
      if (method == nullptr || !method->is_string()) {
        m_writer.push_now(server::error_frame(r.raw_id, k_invalid_request, "Invalid Request: expected a method"));
        return;
      }
      if (id == nullptr || id->is_null()) {  // notifications ask for nothing, but one cancels
        if (method->get_string() == k_cancel_method) cancel(body, o->if_contains("params"));
        return;
      }
      if (!id_valid) {
        m_writer.push_now(
            server::error_frame(server::k_null_id, k_invalid_request, "Invalid Request: id must be a string or a number"));
        return;
      }
      r.method = std::string(method->get_string());
      if (!known(r.method)) {
        m_writer.push_now(server::error_frame(r.raw_id, k_method_not_found, "method not found: " + r.method));
        return;
      }
      if (r.method == "host.shutdown") {  // answered once the stop is done
        m_shutdown_id = r.raw_id;
        m_stop_requested = true;
        return;
      }
      const json::value* p = o->if_contains("params");
      r.params = p ? *p : json::value(json::object());
      if (!wire::all_numbers_finite(r.params)) {
        m_writer.push_now(server::error_frame(r.raw_id, k_invalid_params,
                                              r.method + ": invalid params: a number is beyond the double range"));
        return;
      }
      if (!m_held.empty() || !slot_free() || !m_writer.accepting()) {
        m_held_bytes += r.bytes;
        m_held.push_back(std::move(r));
        return;
      }
      start(std::move(r));
    } catch (const std::exception& e) {
      internal_error_now(r, e.what());
    } catch (...) {
      internal_error_now(r, "unknown exception");
    }
  }

  // The reading thread's answer to a frame whose handling threw.
  void internal_error_now(const Request& r, std::string_view what) {
    m_writer.push_now(r.method.empty()
                          ? server::error_frame(r.raw_id, k_internal_error, "internal error: " + std::string(what))
                          : internal_error_frame(r, what));
  }

  // "$/cancelRequest" {"id": <a request's id>}: the running request of that id is stopped
  // (its thread answers it), one still waiting for a slot is answered now and never runs.
  // Anything else (no such request, a malformed id) is ignored: a notification has no reply.
  void cancel(const std::string& body, const json::value* params) {
    const json::value* target = params && params->is_object() ? params->get_object().if_contains("id") : nullptr;
    if (target == nullptr || !(target->is_string() || target->is_number())) {
      util::log().debug("serve: {} without a string or number id: ignored", k_cancel_method);
      return;
    }
    std::string key;
    if (target->is_string()) {
      key = server::string_id_key(target->get_string());
    } else {
      const auto raw_params = server::raw_member(body, "params");
      const auto raw = raw_params ? server::raw_member(*raw_params, "id") : std::nullopt;
      key = server::number_id_key(raw ? *raw : std::string_view(json::serialize(*target)));
    }
    std::size_t found = m_running.cancel(key);
    for (auto it = m_held.begin(); it != m_held.end();) {
      if (it->key != key) {
        ++it;
        continue;
      }
      m_held_bytes -= it->bytes;
      m_writer.push_now(failure_frame(*it, cancelled_failure()));
      it = m_held.erase(it);
      ++found;
    }
    if (found == 0) util::log().debug("serve: {} for no running request: ignored", k_cancel_method);
  }

  // Runs `r` on a thread of its own, cancellable by its id.
  void start(Request r) {
    {
      std::lock_guard lock(m_mutex);
      ++m_active;
    }
    std::optional<server::RunningRequests::Handle> running;
    try {
      running = m_running.add(r.key);
      r.running = running;
      std::thread([this, r = std::move(r)]() mutable { run_request(std::move(r)); }).detach();
    } catch (...) {
      if (running) m_running.remove(*running);
      release_slot();
      throw;
    }
  }

  // `r` is answered: a cancel no longer finds it, and its slot is free again.
  void finished(const Request& r) {
    if (r.running) m_running.remove(*r.running);
    release_slot();
  }

  // The reading thread may read on, the stop may end. The wake-up comes once the slot is
  // free (so that the reading thread finds it so, and starts a request it held meanwhile),
  // and under the lock: once it is released, the stop may end and the server go, so this
  // thread touches nothing of it after.
  void release_slot() {
    std::lock_guard lock(m_mutex);
    --m_active;
    m_wakeup.notify();
    if (m_active == 0) m_idle.notify_all();
  }

  // --- a request's own thread ----------------------------------------------------------

  void run_request(Request r) {
    try {
      std::string frame;
      try {
        frame = answer(r);
      } catch (const std::exception& e) {
        frame = internal_error_frame(r, e.what());
      } catch (...) {
        frame = internal_error_frame(r, "unknown exception");
      }
      if (!frame.empty()) m_writer.push(std::move(frame));  // waits while the output is full
    } catch (const std::exception& e) {
      util::log().error("serve: {}: the answer could not be written: {}", r.method, e.what());
    } catch (...) {
      util::log().error("serve: {}: the answer could not be written", r.method);
    }
    finished(r);
  }

  // --- answers -------------------------------------------------------------------------

  // The plugin whose tool `name` is (a runtime or an API name); empty for an unknown tool.
  std::string tool_owner(const std::string& name) {
    for (const auto& t : m_host.tools()) {
      if (t.runtime_name == name || t.api_name == name) return t.runtime_name.substr(0, t.runtime_name.find(':'));
    }
    return {};
  }

  // The extension an error reply to `r` names (data.extension): the one the error says
  // answered or failed; else the owner of tool.call's tool (none for an unknown tool); else
  // the extension the `id` parameter names, unless the error is that no such extension is
  // loaded. Empty: none.
  std::string extension_for(const Request& r, const Error* e) {
    if (e != nullptr && !e->extension_id.empty()) return e->extension_id;
    if (r.method == "tool.call") {
      const auto* tool = str(r.params, "tool");
      return tool ? tool_owner(std::string(*tool)) : std::string();
    }
    if (!names_extension_by_id(r.method)) return {};
    const auto* id = str(r.params, "id");
    if (!id) return {};
    std::string named(*id);
    if (e != nullptr && e->kind == ErrorKind::usage && !m_host.health(named)) return {};
    return named;
  }

  // The error reply to `r`. Its data: kind, method, extension, cause; for an extension's
  // own error answer its code and (when it sent one) its data; for a cancelled command
  // the output it had collected. Those last two are the first left out when the frame
  // would exceed the cap.
  std::string failure_frame(const Request& r, const Failure& f) {
    const std::string ext = extension_for(r, &f.error);
    json::object data{{"kind", f.kind}, {"method", r.method}};
    data["extension"] = ext.empty() ? json::value(nullptr) : json::value(ext);
    data["cause"] = cause_name(f.error.cause);
    if (f.error.code) data["code"] = *f.error.code;
    const std::string message =
        f.code == k_request_cancelled ? std::string(k_cancelled_message) : r.method + ": " + f.error.message;
    if (!f.error.data_json && !f.output) {
      const json::value data_value(std::move(data));
      return server::error_frame(r.raw_id, f.code, message, &data_value);
    }
    const json::value smaller(data);
    if (f.error.data_json) data["data"] = parsed_text(*f.error.data_json);
    if (f.output) data["output"] = parsed_text(*f.output);
    const json::value data_value(std::move(data));
    return server::error_frame(r.raw_id, f.code, message, &data_value, &smaller);
  }

  // The frame answering `r` with `reply`; a result over the frame cap becomes an error.
  std::string reply_frame(const Request& r, const Reply& reply) {
    if (const auto* answer = std::get_if<Answer>(&reply)) {
      std::size_t size = 0;
      if (auto frame = server::result_frame(r.raw_id, answer->json, size, answer->key)) return std::move(*frame);
      return failure_frame(r, over_cap(extension_for(r, nullptr), "result", size));
    }
    return failure_frame(r, std::get<Failure>(reply));
  }

  std::string internal_error_frame(const Request& r, std::string_view what) {
    return failure_frame(r, Failure{Error{ErrorKind::internal, "internal error: " + std::string(what), ErrorCause::internal}});
  }

  // The frame answering `r`; empty when it was already written.
  std::string answer(Request& r) {
    if (m_stopping) {
      return failure_frame(r, Failure{Error{ErrorKind::internal, "the server is stopping", ErrorCause::stopped}});
    }
    const std::stop_token stop = r.running ? r.running->source.get_token() : std::stop_token();
    if (stop.stop_requested()) return failure_frame(r, cancelled_failure());  // cancelled before it began
    if (r.method == "provider.stream") return stream(r);
    return reply_frame(r, dispatch(r, stop));
  }

  Reply info_reply(Result<ExtensionInfo> r) {
    if (!r) return Failure{std::move(r).error()};
    return Answer{to_json_text(*r), {}};
  }

  // What `r` answers. The methods that talk to an extension take `stop`, and a cancelled
  // one answers -32800; loading, unloading and discovery are bounded by their own
  // deadlines and run to their end.
  Reply dispatch(const Request& r, const std::stop_token& stop) {
    const std::string& method = r.method;
    const json::value& params = r.params;
    const auto* id = str(params, "id");
    const std::string ext = id ? std::string(*id) : std::string();
    if (method == "host.load") {
      const auto* path = str(params, "path");
      if (!path) return missing("path");
      return info_reply(m_host.load(std::string(*path)));
    }
    if (method == "host.discover") return Answer{to_json_text(m_host.discover()), {}};
    if (method == "host.list") {
      std::string all;
      for (const auto& info : m_host.list()) all += (all.empty() ? "" : ",") + to_json_text(info);
      return Answer{"[" + all + "]", "extensions"};
    }
    if (method == "host.tools") {
      std::string all;
      for (const auto& t : m_host.tools()) all += (all.empty() ? "" : ",") + to_json_text(t);
      return Answer{"[" + all + "]", "tools"};
    }
    if (method == "tool.call") {
      const auto* tool = str(params, "tool");
      if (!tool) return missing("tool");
      const auto* input = member(params, "input");
      ToolCallContext context;
      if (const auto* s = str(params, "session_id")) context.session_id = std::string(*s);
      if (const auto* c = str(params, "cwd")) context.cwd = std::string(*c);
      auto result = m_host.call_named_tool(std::string(*tool), input ? json::serialize(*input) : std::string("{}"),
                                           context, stop);
      return wrapped(std::move(result), "result");
    }
    if (method == "hook.emit") return wrapped(m_host.emit_hook(json::serialize(params), stop), "result");
    if (method == "session.start" || method == "session.end") {
      const auto* session = str(params, "session_id");
      if (!session) return missing("session_id");
      if (method == "session.start") {
        auto injection = m_host.session_start(std::string(*session));
        return Answer{injection ? json::serialize(json::value(*injection)) : std::string("null"), "injection"};
      }
      const auto* transcript = member(params, "transcript");
      auto ended = m_host.session_end(std::string(*session), transcript && !transcript->is_null()
                                                                  ? json::serialize(*transcript)
                                                                  : std::string());
      if (!ended) return Failure{std::move(ended).error()};
      return Answer{*ended ? "true" : "false", "completed"};
    }
    if (!id) return missing("id");
    if (method == "host.unload") {
      auto unloaded = m_host.unload(ext);
      if (!unloaded) return Failure{std::move(unloaded).error()};
      return Answer{"true", "ok"};
    }
    if (method == "host.reload") return info_reply(m_host.reload(ext));
    if (method == "host.health") {
      auto health = m_host.health(ext);
      if (!health) return Failure{Error::usage("Extension '" + ext + "' not found").because(ErrorCause::not_found)};
      auto info = m_host.extension_info(ext);
      auto life = m_host.lifecycle(ext);
      json::object o{{"health", std::string(to_string(*health))}, {"restart_count", info ? info->restart_count : 0}};
      o["lifecycle"] = life ? json::value(json::object{{"generation", life->generation},
                                                       {"health", std::string(to_string(life->health))}})
                            : json::value(nullptr);
      return Answer{json::serialize(o), {}};
    }
    if (method == "host.stats") {
      auto s = m_host.stats(ext);
      if (!s) return Failure{std::move(s).error()};
      return Answer{to_json_text(*s), {}};
    }
    if (method == "host.config") return wrapped(m_host.config_report(ext), "config");
    if (method == "info.get") return wrapped(m_host.info(ext, stop), "info");
    if (method == "command.invoke") {
      const auto* command = str(params, "command");
      if (!command) return missing("command");
      std::vector<std::string> args;
      if (const auto* a = member(params, "args"); a != nullptr && a->is_array()) {
        for (const auto& item : a->get_array()) {
          if (!item.is_string()) return missing("args");
          args.emplace_back(item.get_string());
        }
      }
      auto invoked = m_host.invoke_command(ext, std::string(*command), args, stop);
      if (!invoked) return Failure{std::move(invoked).error()};
      if (invoked->cancelled) {  // answered as cancelled, with what it had collected
        Failure f = cancelled_failure();
        f.output = to_json_text(*invoked);
        return f;
      }
      return Answer{to_json_text(*invoked), {}};
    }
    if (method == "provider.complete") {
      const auto* p = member(params, "params");
      return wrapped(m_host.complete(ext, p ? json::serialize(*p) : std::string("{}"), stop), "result");
    }
    return Failure{Error::internal("no handler for a known method")};
  }


  // provider.stream: the host's call runs on a helper thread while this one takes each
  // event from the relay to the output, waiting for room there as any request does.
  // Writes its own answer (and returns nothing) when the stream had to be cut. A cancel
  // stops the host's call; the events it had sent are delivered, then the -32800 reply.
  std::string stream(Request& r) {
    const auto* id = str(r.params, "id");
    if (!id) return reply_frame(r, missing("id"));
    const std::string ext(*id);
    const auto* p = member(r.params, "params");
    const std::string turn = p ? json::serialize(*p) : std::string("{}");
    std::stop_source stop = r.running ? r.running->source : std::stop_source(std::nostopstate);

    auto relay = std::make_shared<server::StreamRelay>();
    std::optional<Result<std::string>> outcome;  // written by the helper before relay->close()
    std::thread helper([this, relay, &outcome, &ext, &turn, token = stop.get_token()] {
      try {
        outcome = m_host.stream(
            ext, turn, [relay](const std::string& event) { relay->offer(event); }, token);
      } catch (const std::exception& e) {
        outcome = Error::internal(std::string("internal error: ") + e.what());
      } catch (...) {
        outcome = Error::internal("internal error: unknown exception");
      }
      relay->close();
    });
    JoinOnExit join{helper};

    std::optional<Failure> failure;
    std::uint64_t delivered = 0;
    while (auto event = relay->take()) {
      std::size_t size = 0;
      auto frame = server::stream_event_frame(r.raw_id, *event, size);
      if (!frame) {
        relay->cut();
        failure = over_cap(ext, "stream event", size);
        break;
      }
      if (!m_writer.push(std::move(*frame))) {  // the output is closed: nobody reads on
        relay->cut();
        break;
      }
      ++delivered;
    }
    if (!failure && relay->overflowed()) {
      failure = server_failure(k_output_error, "output", ErrorKind::extension, ErrorCause::output_limit, ext,
                               "the client read the stream too slowly: its events outgrew the " +
                                   mib(server::k_stream_buffer_budget) + " buffer, so the stream was cut after " +
                                   std::to_string(delivered) + " events");
    }
    if (failure) {
      // Answered now; the host's call is stopped, and keeps this request's slot until it
      // has ended.
      stop.request_stop();
      m_writer.push(failure_frame(r, *failure));
      return {};
    }
    helper.join();
    return reply_frame(r, wrapped(std::move(*outcome), "result"));
  }

  // --- stopping ------------------------------------------------------------------------

  bool wait_idle_for(std::chrono::milliseconds d) {
    std::unique_lock lock(m_mutex);
    return m_idle.wait_for(lock, d, [this] { return m_active == 0; });
  }

  // Cancels every running call (Host::shutdown_all() fails them), lets their threads
  // answer, answers host.shutdown last, and gives the output a bounded time to drain.
  // stop_fd is still watched meanwhile: each further byte kills every extension at once.
  void stop() {
    m_stopping = true;
    m_writer.stop_waiting();  // what is still to be written is already in memory
    for (const Request& r : m_held) {  // never started: none will now
      m_writer.push(failure_frame(r, Failure{Error{ErrorKind::internal, "the server is stopping", ErrorCause::stopped}}));
    }
    m_held.clear();
    m_held_bytes = 0;
    std::atomic<bool> done{false};
    std::thread stopper([this, &done] {
      try {
        do {
          m_host.shutdown_all();
        } while (!wait_idle_for(k_stop_round));
      } catch (...) {
        util::log().error("serve: stopping every extension failed; waiting for the running requests");
        while (!wait_idle_for(k_stop_round)) {
        }
      }
      done = true;
      m_wakeup.notify();
    });
    JoinOnExit join{stopper};
    while (!done) {
      if (m_kills_pending > 0) {
        m_kills_pending = 0;
        try {
          m_host.kill_all();
        } catch (...) {
          util::log().error("serve: killing every extension failed");
        }
      }
      pollfd fds[2] = {{m_wakeup.fd(), POLLIN, 0}, {m_stop_watched ? m_options.stop_fd : -1, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
        util::log().error("serve: waiting for the stop failed: {}", util::os_error_text(errno));
        break;
      }
      if (fds[0].revents != 0) m_wakeup.drain();
      if (fds[1].revents != 0) read_stop_bytes();
    }
    stopper.join();
    if (m_shutdown_id) {
      std::size_t size = 0;
      if (auto frame = server::result_frame(*m_shutdown_id, R"({"ok":true})", size)) m_writer.push(std::move(*frame));
    }
    m_writer.finish();
  }

  ServeOptions m_options;
  Host m_host;
  Wakeup m_wakeup;
  server::OutputWriter m_writer;
  std::mutex m_mutex;  // guards m_active
  std::condition_variable m_idle;
  int m_active = 0;
  server::RunningRequests m_running;  // what a cancel may stop, by id
  std::atomic<bool> m_stopping{false};
  // The reading thread's own state.
  std::deque<Request> m_held;   // parsed, waiting for a slot, in order
  std::size_t m_held_bytes = 0;  // their bodies' bytes
  bool m_stop_requested = false;            // host.shutdown arrived
  std::optional<std::string> m_shutdown_id;  // its id, answered last
  bool m_stop_watched = false;              // stop_fd is open and watched
  std::uint64_t m_stop_bytes = 0;           // bytes (or the end) seen on stop_fd
  std::uint64_t m_kills_pending = 0;        // bytes past the first, not yet acted on
};

}  // namespace

int serve(const ServeOptions& options) {
  Server server(options);
  return server.run();
}

}  // namespace exthost
