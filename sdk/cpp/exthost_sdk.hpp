// exthost_sdk.hpp — write an exthost extension in C++: one header, Boost.JSON, no Asio.
//
// An extension is a program that speaks JSON-RPC 2.0 on stdin/stdout with Content-Length
// framing (docs/protocol.md). This header does the framing, the dispatch by method, the
// replies and errors, notifications, requests to the host (memory.*, config.*), shutdown and
// cancellation; you register handlers and call run():
//
//   exthost_sdk::Extension ext;
//   ext.tool("echo", "Echo text back", schema, [](exthost_sdk::Call& call) -> boost::json::value {
//     return {{"content", "echo: " + std::string(call.input().at("text").as_string())}};
//   });
//   return ext.run();
//
// Threads: a reader thread parses stdin; handlers run one at a time on the thread that
// called run(), so a handler may block, call the host and send notifications. A
// `$/cancelRequest` marks its request cancelled at once (Call::cancelled()). Never write to
// stdout yourself: it carries frames only; log to stderr.
//
// Link Boost.JSON (the Boost::json target), or include <boost/json/src.hpp> in one file.
#pragma once

#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace exthost_sdk {

namespace json = boost::json;

// The host refuses frame bodies above 4 MiB; refuse to send one rather than be cut off.
inline constexpr std::size_t k_max_frame_body = 4 * 1024 * 1024;
inline constexpr int k_protocol_version = 1;

// Throw from a handler to answer with a JSON-RPC error {code, message}.
class ExtensionError : public std::runtime_error {
 public:
  explicit ExtensionError(const std::string& message, int code = -32000) : std::runtime_error(message), m_code(code) {}
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

class Extension;

// One request being handled.
class Call {
 public:
  Call(Extension& ext, json::value id, std::string method, json::value params)
      : m_ext(ext), m_id(std::move(id)), m_method(std::move(method)), m_params(std::move(params)) {
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
  // True once the host sent $/cancelRequest for this request.
  bool cancelled() const;

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

  void tool(std::string name, std::string description, json::value input_schema, Handler handler) {
    m_tool_specs.push_back(json::object{{"name", name}, {"description", std::move(description)},
                                        {"input_schema", std::move(input_schema)}});
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

  const std::string& plugin_id() const { return m_plugin_id; }
  const std::string& plugin_root() const { return m_plugin_root; }
  const json::object& config() const { return m_config; }

  // --- talking to the host ----------------------------------------------------------

  void notify(const std::string& method, json::value params) {
    send(json::object{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
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
      id = "ext-" + std::to_string(++m_next_id);
      if (m_shared->closed) throw HostError(-32000, "the host closed the connection");
      m_shared->waiters[id] = waiter;
    }
    send(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    std::unique_lock lock(m_shared->mutex);
    m_shared->changed.wait(lock, [&] { return waiter->reply.has_value() || m_shared->closed; });
    if (!waiter->reply) throw HostError(-32000, "the host closed the connection");
    const json::object& reply = waiter->reply->get_object();
    if (const auto* e = reply.if_contains("error"); e != nullptr && !e->is_null()) {
      const auto* code = e->as_object().if_contains("code");
      const auto* message = e->as_object().if_contains("message");
      throw HostError(code && code->is_int64() ? static_cast<int>(code->as_int64()) : -32000,
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
  json::array memory_query(json::object filters = {}) {
    filters["namespace"] = m_plugin_id;
    return request("memory.query", std::move(filters)).at("records").as_array();
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
  int run() {
    // The reader shares only m_shared with us, and reads its own duplicate of the input, so
    // it may outlive this object (and the caller's descriptor) safely.
    const int own = ::dup(m_in);
    std::thread reader([in = own >= 0 ? own : m_in, own, shared = m_shared] {
      read_loop(in, shared);
      if (own >= 0) ::close(own);
    });
    for (;;) {
      Pending next;
      {
        std::unique_lock lock(m_shared->mutex);
        m_shared->changed.wait(lock, [&] { return !m_shared->requests.empty() || m_shared->closed; });
        if (m_shared->requests.empty()) break;
        next = std::move(m_shared->requests.front());
        m_shared->requests.pop_front();
      }
      Call call(*this, next.id, next.method, std::move(next.params));
      try {
        json::value result = dispatch(call);
        send(json::object{{"jsonrpc", "2.0"}, {"id", next.id}, {"result", std::move(result)}});
      } catch (const ExtensionError& e) {
        reply_error(next.id, e.code(), e.what());
      } catch (const std::exception& e) {  // a bug in a handler must not kill the extension
        std::fprintf(stderr, "exthost_sdk: %s failed: %s\n", next.method.c_str(), e.what());
        reply_error(next.id, -32000, next.method + " failed: " + e.what());
      }
      {
        std::lock_guard lock(m_shared->mutex);
        m_shared->cancelled.erase(json::serialize(next.id));
      }
      if (next.method == "shutdown") break;
    }
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

  bool is_cancelled(const json::value& id) {
    std::lock_guard lock(m_shared->mutex);
    return m_shared->cancelled.count(json::serialize(id)) != 0;
  }

  void send(const json::value& message) {
    // Boost.JSON would write an infinity or a NaN as a bare word, which the host refuses as
    // invalid JSON (and restarts the extension): refuse it here instead, as an error.
    if (!finite_numbers(message)) throw ExtensionError("message holds a number JSON cannot carry (infinite or NaN)");
    const std::string body = json::serialize(message);
    if (body.size() > k_max_frame_body) throw ExtensionError("frame exceeds the host's 4 MiB cap");
    const std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    std::lock_guard lock(m_write_mutex);
    std::size_t off = 0;
    while (off < frame.size()) {
      const ssize_t n = ::write(m_out, frame.data() + off, frame.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the host is gone; the reader will see the end of input
      off += static_cast<std::size_t>(n);
    }
  }

 private:
  // Whether every number in `v` is finite, so that JSON can carry it.
  static bool finite_numbers(const json::value& v) {
    if (const double* d = v.if_double()) return std::isfinite(*d);
    if (const auto* a = v.if_array()) {
      for (const auto& item : *a) {
        if (!finite_numbers(item)) return false;
      }
    }
    if (const auto* o = v.if_object()) {
      for (const auto& [key, item] : *o) {
        if (!finite_numbers(item)) return false;
      }
    }
    return true;
  }

  struct Pending {
    json::value id;
    std::string method;
    json::value params;
  };
  struct Waiter {
    std::optional<json::value> reply;
  };
  // What the reader thread and the handlers share.
  struct Shared {
    std::mutex mutex;  // guards everything below
    std::condition_variable changed;
    std::deque<Pending> requests;
    std::map<std::string, std::shared_ptr<Waiter>> waiters;
    std::set<std::string> cancelled;  // serialized ids: 7 and "7" stay distinct
    bool closed = false;
  };

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
      if (!m_tool_specs.empty()) caps["tools"] = m_tool_specs;
      if (!m_providers.empty()) caps["providers"] = m_providers;
      if (!m_capabilities.empty()) caps["capabilities"] = m_capabilities;
      if (!m_hooks.empty()) caps["hooks"] = true;
      if (m_cancellation) caps["cancellation"] = true;
      return json::object{{"protocol_version", k_protocol_version}, {"capabilities", std::move(caps)}};
    }
    if (m == "tool.call") {
      auto it = m_tools.find(text("name"));
      if (it == m_tools.end()) throw ExtensionError("unknown tool: " + text("name"), -32602);
      return it->second(call);
    }
    if (m == "hook.handle") {
      auto it = m_hooks.find(text("kind"));
      json::value answer = it == m_hooks.end() ? json::value(nullptr) : it->second(call);
      return answer.is_null() ? json::value(json::object{{"action", "continue"}}) : answer;
    }
    if (m == "command.invoke") {
      auto it = m_commands.find(text("command"));
      if (it == m_commands.end()) throw ExtensionError("unknown command: " + text("command"), -32601);
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
    throw ExtensionError("method not found: " + m, -32601);
  }

  void reply_error(const json::value& id, int code, const std::string& message) {
    send(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", json::object{{"code", code}, {"message", message}}}});
  }

  // Reads one frame; nullopt at the end of the input or on a framing error.
  static std::optional<json::value> read_frame(int in) {
    std::optional<std::size_t> length;
    std::string line;
    for (;;) {
      char c;
      const ssize_t n = ::read(in, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      if (c != '\n') {
        if (line.size() > 1024) return std::nullopt;  // a header line this long is garbage
        line += c;
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) {
        if (length) break;
        continue;
      }
      const auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (colon != std::string::npos && name == "content-length") length = std::stoul(line.substr(colon + 1));
      line.clear();
    }
    if (*length > k_max_frame_body) return std::nullopt;
    std::string body(*length, '\0');
    std::size_t got = 0;
    while (got < body.size()) {
      const ssize_t n = ::read(in, body.data() + got, body.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      got += static_cast<std::size_t>(n);
    }
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    if (ec) return json::value(nullptr);  // not JSON: skipped by the caller
    return v;
  }

  static void read_loop(int in, std::shared_ptr<Shared> shared) {
    for (;;) {
      auto frame = read_frame(in);
      if (!frame) break;
      const auto* o = frame->if_object();
      if (o == nullptr) continue;
      const auto* method = o->if_contains("method");
      const auto* id = o->if_contains("id");
      std::lock_guard lock(shared->mutex);
      if (method == nullptr) {  // a reply to one of our requests
        if (id == nullptr || !id->is_string()) continue;
        auto it = shared->waiters.find(std::string(id->get_string()));
        if (it == shared->waiters.end()) continue;
        it->second->reply = *frame;
        shared->waiters.erase(it);
      } else if (id == nullptr || id->is_null()) {
        if (*method == "$/cancelRequest") {
          const auto* params = o->if_contains("params");
          const auto* target = params && params->is_object() ? params->get_object().if_contains("id") : nullptr;
          if (target) shared->cancelled.insert(json::serialize(*target));
        }
      } else if (method->is_string()) {
        const auto* params = o->if_contains("params");
        shared->requests.push_back(Pending{*id, std::string(method->get_string()), params ? *params : json::value()});
      }
      shared->changed.notify_all();
    }
    std::lock_guard lock(shared->mutex);
    shared->closed = true;
    shared->changed.notify_all();
  }

  int m_in, m_out;
  bool m_cancellation;
  json::array m_tool_specs, m_providers, m_capabilities;
  std::map<std::string, Handler> m_tools, m_hooks, m_methods;
  std::map<std::string, CommandHandler> m_commands;
  std::function<void(Call&)> m_on_initialize;
  std::string m_plugin_id, m_plugin_root;
  json::object m_config;

  std::mutex m_write_mutex;  // one frame at a time on the output
  std::shared_ptr<Shared> m_shared = std::make_shared<Shared>();
  std::uint64_t m_next_id = 0;  // guarded by m_shared->mutex
};

inline bool Call::cancelled() const { return m_ext.is_cancelled(m_id); }

inline void Call::output(json::object event) const {
  const auto* rid = params().if_contains("request_id");
  m_ext.notify("command.output", json::object{{"request_id", rid ? *rid : json::value(nullptr)}, {"event", std::move(event)}});
}

inline void Call::stream(json::object event) const { m_ext.notify("provider.stream.event", std::move(event)); }

}  // namespace exthost_sdk
