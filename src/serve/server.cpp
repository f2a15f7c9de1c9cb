// serve/server.cpp — `exthost serve`: requests in, Host calls, replies out.
//
// The reading thread parses frames and hands each request to a thread of its own (at most
// k_max_serve_in_flight at once); replies and stream notifications are written whole under
// one mutex. host.shutdown is answered on the reading thread after every extension stopped.
#include "exthost/serve.hpp"

#include <unistd.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <semaphore>
#include <thread>

#include "exthost/json_text.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/frame_parser.hpp"
#include "wire/frame_writer.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace json = boost::json;
namespace {

// JSON-RPC's own codes, then one per ErrorKind (docs/serve.md).
constexpr int k_parse_error = -32700;
constexpr int k_invalid_request = -32600;
constexpr int k_method_not_found = -32601;
constexpr int k_invalid_params = -32602;
constexpr int k_internal_error = -32603;
constexpr int k_manifest_error = -32001;
constexpr int k_extension_error = -32002;
constexpr int k_timeout_error = -32003;

int code_for(ErrorKind k) {
  switch (k) {
    case ErrorKind::usage: return k_invalid_params;
    case ErrorKind::manifest: return k_manifest_error;
    case ErrorKind::extension: return k_extension_error;
    case ErrorKind::timeout: return k_timeout_error;
    case ErrorKind::internal: return k_internal_error;
  }
  return k_internal_error;
}

std::string_view kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::usage: return "usage";
    case ErrorKind::manifest: return "manifest";
    case ErrorKind::extension: return "extension";
    case ErrorKind::timeout: return "timeout";
    case ErrorKind::internal: return "internal";
  }
  return "internal";
}

// A failed request: its method, the extension it concerned (if any), the host's error.
struct Failure {
  Error error;
  std::string extension;
};

using Reply = std::variant<json::value, Failure>;

json::value parsed(const std::string& text) {
  wire::JsonParser parser;
  auto v = parser.parse(text);
  return v ? std::move(v).value() : json::value(nullptr);
}

class Server {
 public:
  explicit Server(const ServeOptions& o) : m_options(o), m_host(o.host) {}

  int run() {
    wire::FrameParser parser("serve client");
    std::string buffer(64 * 1024, '\0');
    int status = 0;
    while (!m_stopping) {
      const ssize_t n = ::read(m_options.input_fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (auto err = parser.finish()) {
          util::log().warn("serve: {}", *err);
          status = 1;
        }
        break;
      }
      std::string_view input(buffer.data(), static_cast<std::size_t>(n));
      while (!input.empty() && !m_stopping) {
        auto step = parser.feed(input);
        input.remove_prefix(step.consumed);
        if (step.error) {
          write(wire::encode_error_reply(nullptr, k_parse_error, "Parse error: " + *step.error));
          m_stopping = true;
          status = 1;
          break;
        }
        if (step.body) handle_frame(std::string(*step.body));
      }
    }
    wait_idle();
    m_host.shutdown_all();
    return status;
  }

 private:
  void handle_frame(const std::string& body) {
    wire::JsonParser parser;
    auto v = parser.parse(body);
    if (!v) {
      write(wire::encode_error_reply(nullptr, k_parse_error, "Parse error: " + v.error().message));
      return;
    }
    const auto* o = v->if_object();
    const json::value* method = o ? o->if_contains("method") : nullptr;
    const json::value* id = o ? o->if_contains("id") : nullptr;
    if (method == nullptr || !method->is_string()) {
      write(wire::encode_error_reply(id && (id->is_string() || id->is_number()) ? *id : json::value(nullptr),
                                     k_invalid_request, "Invalid Request: expected a method"));
      return;
    }
    if (id == nullptr || id->is_null()) return;  // notifications ask for nothing
    if (!id->is_string() && !id->is_number()) {
      write(wire::encode_error_reply(nullptr, k_invalid_request, "Invalid Request: id must be a string or a number"));
      return;
    }
    const std::string name(method->get_string());
    const json::value* p = o->if_contains("params");
    json::value params = p ? *p : json::value(json::object());
    if (!known(name)) {
      write(wire::encode_error_reply(*id, k_method_not_found, "method not found: " + name));
      return;
    }
    if (name == "host.shutdown") {  // answered here, after every extension stopped
      wait_idle();
      m_host.shutdown_all();
      reply(*id, name, json::value(json::object{{"ok", true}}));
      m_stopping = true;
      return;
    }
    m_slots.acquire();  // backpressure: the input waits while every slot is busy
    {
      std::lock_guard lock(m_mutex);
      ++m_active;
    }
    std::thread([this, request_id = *id, name, params = std::move(params)]() mutable {
      Reply r = dispatch(request_id, name, params);
      reply(request_id, name, std::move(r));
      m_slots.release();
      std::lock_guard lock(m_mutex);
      if (--m_active == 0) m_idle.notify_all();
    }).detach();
  }

  static bool known(const std::string& method) {
    static const char* const k_methods[] = {
        "host.load",   "host.unload",    "host.reload",       "host.discover",   "host.list",
        "host.tools",  "host.health",    "host.stats",        "host.config",     "host.shutdown",
        "tool.call",   "hook.emit",      "command.invoke",    "provider.complete", "provider.stream",
        "info.get",    "session.start",  "session.end"};
    for (const char* m : k_methods) {
      if (method == m) return true;
    }
    return false;
  }

  void wait_idle() {
    std::unique_lock lock(m_mutex);
    m_idle.wait(lock, [this] { return m_active == 0; });
  }

  void reply(const json::value& id, const std::string& method, Reply r) {
    if (auto* v = std::get_if<json::value>(&r)) {
      write(wire::encode_result_reply(id, *v));
      return;
    }
    auto& f = std::get<Failure>(r);
    json::object data{{"kind", kind_name(f.error.kind)}, {"method", method}};
    data["extension"] = f.extension.empty() ? json::value(nullptr) : json::value(f.extension);
    const json::value data_value(std::move(data));
    write(wire::encode_error_reply(id, code_for(f.error.kind), method + ": " + f.error.message, &data_value));
  }

  void write(const std::string& body) {
    const std::string frame = wire::FrameWriter::frame(body);
    std::lock_guard lock(m_write_mutex);
    std::size_t off = 0;
    while (off < frame.size() && !m_output_closed) {
      const ssize_t n = ::write(m_options.output_fd, frame.data() + off, frame.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        util::log().warn("serve: the client stopped reading: {}", util::os_error_text(errno));
        m_output_closed = true;
        break;
      }
      off += static_cast<std::size_t>(n);
    }
  }

  // --- the methods ---------------------------------------------------------------------

  static const json::string* str(const json::value& params, std::string_view key) {
    const auto* o = params.if_object();
    const auto* v = o ? o->if_contains(key) : nullptr;
    return v ? v->if_string() : nullptr;
  }

  static Failure missing(std::string_view key) {
    return Failure{Error::usage("missing or invalid '" + std::string(key) + "' parameter"), {}};
  }

  static Reply from(Result<std::string> r, const std::string& extension, const char* key) {
    if (!r) return Failure{std::move(r).error(), extension};
    return json::value(json::object{{key, parsed(*r)}});
  }

  Reply info_reply(Result<ExtensionInfo> r, const std::string& extension) {
    if (!r) return Failure{std::move(r).error(), extension};
    return parsed(to_json_text(*r));
  }

  Reply dispatch(const json::value& request_id, const std::string& method, const json::value& params) {
    const auto* id = str(params, "id");
    const std::string ext = id ? std::string(*id) : std::string();
    if (method == "host.load") {
      const auto* path = str(params, "path");
      if (!path) return missing("path");
      return info_reply(m_host.load(std::string(*path)), {});
    }
    if (method == "host.discover") return parsed(to_json_text(m_host.discover()));
    if (method == "host.list") {
      json::array all;
      for (const auto& info : m_host.list()) all.push_back(parsed(to_json_text(info)));
      return json::value(json::object{{"extensions", std::move(all)}});
    }
    if (method == "host.tools") {
      json::array all;
      for (const auto& t : m_host.tools()) all.push_back(parsed(to_json_text(t)));
      return json::value(json::object{{"tools", std::move(all)}});
    }
    if (method == "tool.call") {
      const auto* tool = str(params, "tool");
      if (!tool) return missing("tool");
      const auto& o = params.as_object();
      const auto* input = o.if_contains("input");
      ToolCallContext context;
      if (const auto* s = str(params, "session_id")) context.session_id = std::string(*s);
      if (const auto* c = str(params, "cwd")) context.cwd = std::string(*c);
      const std::string name(*tool);
      auto r = m_host.call_named_tool(name, input ? json::serialize(*input) : std::string("{}"), context);
      return from(std::move(r), name.substr(0, name.find(':')), "result");
    }
    if (method == "hook.emit") return from(m_host.emit_hook(json::serialize(params)), {}, "result");
    if (method == "session.start" || method == "session.end") {
      const auto* session = str(params, "session_id");
      if (!session) return missing("session_id");
      if (method == "session.start") {
        auto injection = m_host.session_start(std::string(*session));
        return json::value(json::object{{"injection", injection ? json::value(*injection) : json::value(nullptr)}});
      }
      const auto* transcript = params.as_object().if_contains("transcript");
      auto ended = m_host.session_end(std::string(*session),
                                      transcript && !transcript->is_null() ? json::serialize(*transcript) : std::string());
      if (!ended) return Failure{std::move(ended).error(), {}};
      return json::value(json::object{{"completed", *ended}});
    }
    if (!id) return missing("id");
    if (method == "host.unload") {
      auto r = m_host.unload(ext);
      if (!r) return Failure{std::move(r).error(), ext};
      return json::value(json::object{{"ok", true}});
    }
    if (method == "host.reload") return info_reply(m_host.reload(ext), ext);
    if (method == "host.health") {
      auto health = m_host.health(ext);
      if (!health) return Failure{Error::usage("Extension '" + ext + "' not found"), ext};
      auto info = m_host.extension_info(ext);
      auto life = m_host.lifecycle(ext);
      json::object o{{"health", std::string(to_string(*health))}, {"restart_count", info ? info->restart_count : 0}};
      o["lifecycle"] = life ? json::value(json::object{{"generation", life->generation},
                                                       {"health", std::string(to_string(life->health))}})
                            : json::value(nullptr);
      return json::value(std::move(o));
    }
    if (method == "host.stats") {
      auto s = m_host.stats(ext);
      if (!s) return Failure{std::move(s).error(), ext};
      return parsed(to_json_text(*s));
    }
    if (method == "host.config") return from(m_host.config_report(ext), ext, "config");
    if (method == "info.get") return from(m_host.info(ext), ext, "info");
    if (method == "command.invoke") {
      const auto* command = str(params, "command");
      if (!command) return missing("command");
      std::vector<std::string> args;
      if (const auto* a = params.as_object().if_contains("args"); a != nullptr && a->is_array()) {
        for (const auto& item : a->get_array()) {
          if (!item.is_string()) return missing("args");
          args.emplace_back(item.get_string());
        }
      }
      auto r = m_host.invoke_command(ext, std::string(*command), args);
      if (!r) return Failure{std::move(r).error(), ext};
      return parsed(to_json_text(*r));
    }
    if (method == "provider.complete" || method == "provider.stream") {
      const auto* p = params.as_object().if_contains("params");
      const std::string turn = p ? json::serialize(*p) : std::string("{}");
      if (method == "provider.complete") return from(m_host.complete(ext, turn), ext, "result");
      auto r = m_host.stream(ext, turn, [this, request_id](const std::string& event) {
        write(wire::encode_notification("provider.stream.event",
                                        json::object{{"request_id", request_id}, {"event", parsed(event)}}));
      });
      return from(std::move(r), ext, "result");
    }
    return Failure{Error::internal("no handler for a known method"), {}};
  }

  ServeOptions m_options;
  Host m_host;
  std::counting_semaphore<k_max_serve_in_flight> m_slots{k_max_serve_in_flight};
  std::mutex m_mutex;  // guards m_active
  std::condition_variable m_idle;
  int m_active = 0;
  std::mutex m_write_mutex;  // one frame at a time on the output
  bool m_output_closed = false;
  std::atomic<bool> m_stopping{false};
};

}  // namespace

int serve(const ServeOptions& options) {
  Server server(options);
  return server.run();
}

}  // namespace exthost
