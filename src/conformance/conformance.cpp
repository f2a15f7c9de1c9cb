// conformance/conformance.cpp — the protocol checker: a scripted host at the byte level.
//
// Blocking and single-threaded on purpose: one child, poll() with deadlines, stdout kept
// raw so that stray bytes are seen exactly; stderr drained alongside so the child never
// blocks on it. The child is killed (group) and reaped however the checks end.
#include "exthost/conformance.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "host/manifest.hpp"
#include "process/environment.hpp"
#include "process/launcher.hpp"
#include "protocol/initialize.hpp"
#include "util/text.hpp"
#include "wire/frame_parser.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace json = boost::json;
namespace {

// After answering shutdown, an extension must be gone within this (the protocol's promise).
constexpr std::chrono::milliseconds k_exit_after_shutdown{2000};
// The stderr kept for the report.
constexpr std::size_t k_stderr_tail = 4096;
// Bytes taken from a pipe per read.
constexpr std::size_t k_read_chunk = 65536;
// Stray stdout bytes read before the checker stops reading stdout: as many as the host's
// own reader takes as header lines of one frame before it drops the transport.
constexpr std::size_t k_max_stray_bytes = wire::k_max_header_block;
// Stray bytes kept to quote in the report (the rest are only counted).
constexpr std::size_t k_stray_kept = 64;
// Bytes read ahead of the frames taken so far: the largest frame with its headers, and one
// read. Past it stdout is not read until frames are taken (the child waits on its pipe).
constexpr std::size_t k_max_pending = wire::k_max_frame_body + wire::k_max_header_block + k_read_chunk;

using Clock = std::chrono::steady_clock;

class Session {
 public:
  Session(process::Launched child, std::chrono::milliseconds step, int stop_fd)
      : m_child(child), m_step(step), m_stop_fd(stop_fd) {}
  ~Session() {
    ::kill(-m_child.pid, SIGKILL);
    ::close(m_child.stdin_fd);
    ::close(m_child.stdout_fd);
    ::close(m_child.stderr_fd);
    if (!m_reaped) ::waitpid(m_child.pid, nullptr, 0);
  }

  // Writes to the child's stdin. A child that died leaves a pipe without a reader: the
  // write fails with EPIPE, and the SIGPIPE it raises is taken here, never delivered.
  bool write_all(std::string_view bytes) {
    sigset_t pipe_only, before;
    ::sigemptyset(&pipe_only);
    ::sigaddset(&pipe_only, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
    bool ok = true;
    while (!bytes.empty()) {
      const ssize_t n = ::write(m_child.stdin_fd, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n < 0 && errno == EPIPE) {
          const timespec now{0, 0};
          ::sigtimedwait(&pipe_only, nullptr, &now);
        }
        ok = false;
        break;
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return ok;
  }

  // Writes a request in pieces: the header split mid-line, the body in two parts.
  bool send_in_pieces(const json::value& message) {
    const std::string body = wire::to_json(message);
    const std::string header = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    const std::size_t cut = body.size() / 2;
    for (std::string_view piece : {std::string_view(header).substr(0, 7), std::string_view(header).substr(7),
                                   std::string_view(body).substr(0, cut), std::string_view(body).substr(cut)}) {
      if (!write_all(piece)) return false;
      ::usleep(2000);  // separate reads on the other side, most of the time
    }
    return true;
  }
  bool send(const json::value& message) {
    const std::string body = wire::to_json(message);
    return write_all("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }

  // The next frame's JSON, within one step. Framing problems end the session's stdout.
  std::optional<json::value> next() { return next(Clock::now() + m_step); }
  std::optional<json::value> next(Clock::time_point deadline) {
    for (;;) {
      if (m_stopped) return std::nullopt;
      if (auto frame = take_frame()) return frame;
      if (m_broken || m_eof) return std::nullopt;
      if (!pump(deadline)) return std::nullopt;
    }
  }
  // The next frame that is not a notification (notifications are allowed at any time).
  std::optional<json::value> next_reply() { return next_reply(Clock::now() + m_step); }
  std::optional<json::value> next_reply(Clock::time_point deadline) {
    for (;;) {
      auto v = next(deadline);
      if (!v) return std::nullopt;
      const auto* o = v->if_object();
      if (o && o->contains("method") && !o->contains("id")) {
        ++m_notifications;
        continue;
      }
      return v;
    }
  }

  // Waits for the process to exit within `bound`.
  bool exits_within(std::chrono::milliseconds bound) {
    const auto deadline = Clock::now() + bound;
    while (!m_stopped && Clock::now() < deadline) {
      if (exited()) return true;
      pump(Clock::now() + std::chrono::milliseconds(10));
    }
    return false;
  }
  // Whether the process has exited (it is reaped then, and its status kept).
  bool exited() {
    if (!m_reaped && ::waitpid(m_child.pid, &m_status, WNOHANG) == m_child.pid) m_reaped = true;
    return m_reaped;
  }
  // How it ended: "exited with status 0", "was killed by signal 6 (SIGABRT)".
  std::string exit_description() const {
    if (!m_reaped) return "is still running";
    if (WIFEXITED(m_status)) return "exited with status " + std::to_string(WEXITSTATUS(m_status));
    const int sig = WTERMSIG(m_status);
    const char* name = ::sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name != nullptr ? std::string(" (SIG") + name + ")" : "");
  }
  bool exited_cleanly() const { return m_reaped && WIFEXITED(m_status) && WEXITSTATUS(m_status) == 0; }

  // Replies until every id in `wanted` (serialized) has one, within one step in all;
  // replies with other ids (late answers to earlier checks) are passed over. Returns the
  // replies by serialized id.
  std::map<std::string, json::value> replies_to(std::set<std::string> wanted) {
    const auto deadline = Clock::now() + m_step;
    std::map<std::string, json::value> got;
    while (!wanted.empty()) {
      auto v = next_reply(deadline);
      if (!v) break;
      const auto* o = v->if_object();
      const auto* id = o ? o->if_contains("id") : nullptr;
      if (id == nullptr) continue;
      const std::string key = json::serialize(*id);
      if (wanted.erase(key) != 0) got.emplace(key, std::move(*v));
    }
    return got;
  }

  // Takes whatever whole frames and stray bytes are still read ahead (while waiting for the
  // exit, stdout is read but not parsed), so that the report judges all that was read.
  void settle() {
    while (!m_broken && take_frame()) {
    }
  }
  // The first stray bytes (up to k_stray_kept), and how many there were in all.
  const std::string& stray() const { return m_stray; }
  std::size_t stray_bytes() const { return m_stray_bytes; }
  // Whether the checker stopped reading stdout for its stray bytes.
  bool stray_over_cap() const { return m_stray_bytes > k_max_stray_bytes; }
  std::size_t largest_frame() const { return m_largest; }
  const std::string& framing_error() const { return m_framing_error; }
  std::string stderr_tail() const { return m_stderr; }
  // Whether the stop descriptor became readable (the child's group is then killed).
  bool stopped() const { return m_stopped; }
  // Whether the child's stdout ended.
  bool output_ended() const { return m_eof; }

 private:
  // Reads whatever is ready until `deadline`; false on timeout or when stdout ended.
  bool pump(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    // A stream that ended is left out, so that waiting for the exit does not spin on it;
    // so is stdout once it broke or while enough is read ahead of the frames taken.
    const bool read_stdout = !m_eof && !m_broken && m_pending.size() < k_max_pending;
    pollfd fds[3] = {{read_stdout ? m_child.stdout_fd : -1, POLLIN, 0},
                     {m_stderr_eof ? -1 : m_child.stderr_fd, POLLIN, 0},
                     {m_stop_fd, POLLIN, 0}};
    const int n = ::poll(fds, m_stop_fd >= 0 ? 3 : 2, static_cast<int>(left.count()));
    if (n <= 0) return false;
    if (m_stop_fd >= 0 && fds[2].revents != 0) {
      m_stopped = true;
      ::kill(-m_child.pid, SIGKILL);  // the destructor reaps it
      return false;
    }
    char buf[k_read_chunk];
    if (fds[1].revents != 0) {
      const ssize_t r = ::read(m_child.stderr_fd, buf, sizeof buf);
      if (r > 0) {
        m_stderr.append(buf, static_cast<std::size_t>(r));
        if (m_stderr.size() > k_stderr_tail) m_stderr.erase(0, m_stderr.size() - k_stderr_tail);
      } else if (r == 0 || errno != EINTR) {
        m_stderr_eof = true;
      }
    }
    if (fds[0].revents != 0) {
      const ssize_t r = ::read(m_child.stdout_fd, buf, sizeof buf);
      if (r <= 0) {
        m_eof = true;
        return false;
      }
      m_pending.append(buf, static_cast<std::size_t>(r));
    }
    return !m_eof || !m_pending.empty();
  }

  // Counts stray bytes, keeps the first few, and stops reading stdout past the cap: an
  // extension that writes endlessly (`yes`) must not grow the checker.
  void add_stray(std::string_view bytes) {
    m_stray_bytes += bytes.size();
    if (m_stray.size() < k_stray_kept) m_stray.append(bytes.substr(0, k_stray_kept - m_stray.size()));
    if (m_stray_bytes > k_max_stray_bytes && !m_broken) {
      m_framing_error = "more than " + std::to_string(k_max_stray_bytes) +
                        " stray bytes on stdout; stopped reading it";
      m_broken = true;
      m_pending.clear();
    }
  }

  // One whole frame out of m_pending, noting bytes before a header.
  std::optional<json::value> take_frame() {
    if (m_pending.empty()) return std::nullopt;
    // Anything before "Content-Length" at a frame boundary is stray output.
    const auto at = util::iequals_ascii(std::string_view(m_pending).substr(0, 15), "Content-Length:")
                        ? 0
                        : m_pending.find("Content-Length:");
    if (at == std::string::npos) {
      if (m_pending.size() > 64 || m_pending.find('\n') != std::string::npos) {
        add_stray(m_pending);
        m_pending.clear();
      }
      return std::nullopt;
    }
    if (at > 0) {
      add_stray(std::string_view(m_pending).substr(0, at));
      m_pending.erase(0, at);
      if (m_broken) return std::nullopt;
    }
    wire::FrameParser parser("conformance");
    auto step = parser.feed(m_pending);
    if (step.error) {
      m_framing_error = *step.error;
      m_broken = true;
      return std::nullopt;
    }
    if (!step.body) return std::nullopt;  // incomplete: read more
    const std::string body(*step.body);
    m_pending.erase(0, step.consumed);
    m_largest = std::max(m_largest, body.size());
    wire::JsonParser json_parser;  // the host's own limits: depth, numbers in range
    auto v = json_parser.parse(body);
    if (!v) {
      m_framing_error = "a frame body is not JSON: " + v.error().message;
      return json::value(nullptr);
    }
    return std::move(v).value();
  }

  process::Launched m_child;
  std::chrono::milliseconds m_step;
  int m_stop_fd;
  std::string m_pending, m_stray, m_stderr, m_framing_error;
  std::size_t m_largest = 0;
  std::size_t m_stray_bytes = 0;
  std::size_t m_notifications = 0;
  int m_status = 0;
  bool m_eof = false, m_stderr_eof = false, m_broken = false, m_reaped = false, m_stopped = false;
};

// The most concurrency an extension may declare.
constexpr auto k_max_concurrency = static_cast<std::int64_t>(protocol::k_max_concurrency);

std::string frame_of_body(std::string_view body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}
std::string frame(const json::value& message) { return frame_of_body(wire::to_json(message)); }

ConformanceCheck check(std::string name, std::string what) { return ConformanceCheck{std::move(name), std::move(what), false, {}}; }

}  // namespace

bool ConformanceReport::passed() const {
  for (const auto& c : checks) {
    if (!c.passed) return false;
  }
  return !checks.empty();
}

ConformanceReport check_conformance(const std::filesystem::path& plugin_dir, std::chrono::milliseconds step,
                                    int stop_fd) {
  ConformanceReport report;
  report.plugin = std::filesystem::absolute(plugin_dir).lexically_normal().filename().string();
  auto spawn = check("spawn", "the manifest is valid and the extension starts");
  auto framing = check("framing", "reads a request written in pieces; answers in Content-Length frames");
  auto clean = check("stdout-clean", "writes nothing but frames on stdout");
  auto echo = check("id-echo", "answers each request with its id, string or number, verbatim");
  auto shape = check("initialize-shape", "initialize answers {protocol_version: 1, capabilities: {…}}");
  auto specs = check("tool-specs", "declares valid tool and provider specs");
  auto unknown = check("unknown-method", "answers an unknown method with an error {code, message}");
  auto concurrency = check("concurrency", "declares concurrency, if at all, as an integer from 1 to 64");
  auto pipelining = check("pipelining", "answers requests written at once, each with its id (any order)");
  auto cancel = check("cancel-unknown", "survives $/cancelRequest for an unknown id");
  auto utf8 = check("invalid-utf8", "answers a request holding invalid UTF-8 with an error, or drops it, and goes on");
  auto cap = check("frame-cap", "keeps every frame within 4 MiB");
  auto shutdown = check("shutdown", "answers shutdown and exits within 2 s");
  auto exit_status = check("exit-status", "exits with status 0 after shutdown, not by a signal");
  auto finish = [&]() -> ConformanceReport& {
    report.checks = {spawn, framing,     clean,  echo, shape, specs,    concurrency, unknown,
                     pipelining, cancel, utf8,  cap,  shutdown, exit_status};
    for (auto& c : report.checks) {
      if (!c.passed && c.detail.empty()) c.detail = "not reached";
    }
    return report;
  };
  // Stopped from outside: what was not decided yet did not pass.
  auto stopped = [&](Session& s) -> ConformanceReport& {
    for (auto* c : {&framing, &clean, &echo, &shape, &specs, &concurrency, &unknown, &pipelining, &cancel, &utf8, &cap,
                    &shutdown, &exit_status}) {
      if (!c->passed) c->detail = "stopped";
    }
    report.stderr_tail = s.stderr_tail();
    return finish();
  };

  auto manifest = host::read_manifest(plugin_dir);
  if (!manifest || !manifest->has_value()) {
    spawn.detail = manifest ? "the plugin declares no extension" : manifest.error().message;
    return finish();
  }
  const host::Manifest& m = **manifest;
  std::string exe = host::resolve_command(m);
  if (exe.find('/') == std::string::npos) exe = process::find_in_path(exe);
  // Whether stdout held only frames, judged on what was read.
  auto judge_clean = [&](const Session& s) {
    clean.passed = s.stray().empty() && s.framing_error().empty();
    if (s.stray_over_cap()) {
      clean.detail = "more than " + std::to_string(k_max_stray_bytes) +
                     " stray bytes on stdout (not all read), starting " +
                     util::debug_quote(util::utf8_lossy(s.stray().substr(0, 40)));
    } else if (!s.stray().empty()) {
      clean.detail = std::to_string(s.stray_bytes()) + " stray bytes on stdout, starting " +
                     util::debug_quote(util::utf8_lossy(s.stray().substr(0, 40)));
    } else if (!s.framing_error().empty()) {
      clean.detail = s.framing_error();
    }
  };
  auto launched = process::launch(m.id, exe, host::resolve_args(m), m.plugin_dir, process::allowed_environment());
  if (!launched) {
    spawn.detail = launched.error().message;
    return finish();
  }
  spawn.passed = true;
  Session s(*launched, step, stop_fd);

  // initialize, written in pieces, with a string id.
  const json::value init_id = "conformance-1";
  s.send_in_pieces(json::object{{"jsonrpc", "2.0"},
                                {"id", init_id},
                                {"method", "initialize"},
                                {"params", json::parse(json::serialize(protocol::initialize_params(
                                               m.id, m.plugin_dir.string(), json::object())))}});
  auto init = s.next_reply();
  if (s.stopped()) return stopped(s);
  if (!init) {
    framing.detail = s.framing_error().empty() ? "no frame answered initialize within " +
                                                     std::to_string(step.count()) + " ms"
                                               : s.framing_error();
    judge_clean(s);
    report.stderr_tail = s.stderr_tail();
    return finish();
  }
  framing.passed = s.framing_error().empty();
  framing.detail = framing.passed ? "" : s.framing_error();
  const auto* io = init->if_object();
  bool declares_cancellation = false;
  bool string_id_ok = io && io->contains("id") && io->at("id") == init_id;
  if (io && io->contains("error")) {
    shape.detail = "initialize answered an error: " + json::serialize(io->at("error"));
  } else if (const auto* result = io ? io->if_contains("result") : nullptr) {
    const auto* r = result->if_object();
    const auto* version = r ? r->if_contains("protocol_version") : nullptr;
    const auto* caps = r ? r->if_contains("capabilities") : nullptr;
    if (r == nullptr) {
      shape.detail = "the result is not an object";
    } else if (version == nullptr || !version->is_number() || version->to_number<double>() != 1) {
      shape.detail = "protocol_version must be 1, got " + (version ? json::serialize(*version) : std::string("nothing"));
    } else if (caps != nullptr && !caps->is_object()) {
      shape.detail = "capabilities must be an object";
    } else {
      shape.passed = true;
      const auto* declared = caps != nullptr ? caps->as_object().if_contains("concurrency") : nullptr;
      declares_cancellation = caps != nullptr && caps->as_object().contains("cancellation") &&
                              caps->as_object().at("cancellation") == true;
      if (declared == nullptr) {
        concurrency.passed = true;
        concurrency.detail = "not declared (1)";
      } else if ((declared->is_int64() || declared->is_uint64()) && declared->to_number<double>() >= 1 &&
                 declared->to_number<double>() <= static_cast<double>(k_max_concurrency)) {
        concurrency.passed = true;
        concurrency.detail = json::serialize(*declared);
      } else {
        concurrency.detail = "must be an integer from 1 to " + std::to_string(k_max_concurrency) + ", got " +
                             json::serialize(*declared);
      }
      // The specs are judged on their own: a bad concurrency is the check above's finding.
      json::value specs_only = *result;
      if (auto* so = specs_only.if_object()) {
        if (auto* c = so->if_contains("capabilities"); c != nullptr && c->is_object()) {
          c->as_object().erase("concurrency");
        }
      }
      auto parsed = protocol::parse_initialize_result(m.id, specs_only);
      specs.passed = parsed.ok();
      specs.detail = parsed ? std::to_string(parsed->tools.size()) + " tools, " + std::to_string(parsed->providers.size()) +
                                  " providers"
                            : parsed.error().message;
    }
  } else {
    shape.detail = "the reply has neither result nor error";
  }

  // An unknown method, with a numeric id.
  s.send(json::object{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "conformance.no_such_method"}, {"params", json::object()}});
  auto unknown_reply = s.next_reply();
  if (s.stopped()) return stopped(s);
  bool number_id_ok = false;
  if (!unknown_reply) {
    unknown.detail = "no answer within " + std::to_string(step.count()) + " ms";
  } else if (const auto* uo = unknown_reply->if_object()) {
    number_id_ok = uo->contains("id") && uo->at("id") == 2;
    const auto* err = uo->if_contains("error");
    const auto* eo = err ? err->if_object() : nullptr;
    if (eo && eo->contains("code") && eo->at("code").is_int64() && eo->contains("message") && eo->at("message").is_string()) {
      unknown.passed = true;
      unknown.detail = "code " + json::serialize(eo->at("code"));
    } else {
      unknown.detail = "expected an error object, got " + json::serialize(*unknown_reply);
    }
  }
  echo.passed = string_id_ok && number_id_ok;
  if (!echo.passed) {
    echo.detail = std::string(string_id_ok ? "" : "the string id \"conformance-1\" was not echoed; ") +
                  (number_id_ok ? "" : "the numeric id 2 was not echoed");
  }

  const std::string waited = " within " + std::to_string(step.count()) + " ms";
  // Says what became of the extension when a request went unanswered.
  auto unanswered = [&](const std::string& what) {
    if (s.output_ended()) s.exits_within(k_exit_after_shutdown);
    if (s.exited()) return what + ": the extension " + s.exit_description();
    return what + (s.output_ended() ? ": the extension closed its stdout" : waited);
  };

  // Several requests in one write.
  const std::vector<json::value> pipelined = {10, "conformance-11", 12, "conformance-13"};
  std::string burst;
  std::set<std::string> burst_ids;
  for (const auto& id : pipelined) {
    burst += frame(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", "conformance.no_such_method"}, {"params", json::object()}});
    burst_ids.insert(json::serialize(id));
  }
  s.write_all(burst);
  auto burst_replies = s.replies_to(burst_ids);
  if (s.stopped()) return stopped(s);
  if (burst_replies.size() == pipelined.size()) {
    pipelining.passed = true;
    pipelining.detail = std::to_string(pipelined.size()) + " answered";
  } else {
    std::string missing;
    for (const auto& id : burst_ids) {
      if (burst_replies.count(id) == 0) missing += (missing.empty() ? "" : ", ") + id;
    }
    pipelining.detail = unanswered("no answer for id " + missing);
  }

  // A cancellation nobody asked for, then a request: it must still be answered. Only an
  // extension that declared cancellation is ever sent one.
  if (!declares_cancellation) {
    cancel.passed = true;
    cancel.detail = "cancellation not declared; not sent";
  } else {
    s.send(json::object{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", 424242}}}});
    s.send(json::object{{"jsonrpc", "2.0"}, {"id", 20}, {"method", "conformance.no_such_method"}, {"params", json::object()}});
    cancel.passed = s.replies_to({"20"}).size() == 1;
    if (s.stopped()) return stopped(s);
    if (!cancel.passed) cancel.detail = unanswered("no answer to the next request");
  }

  // Bytes that are not UTF-8 inside a request, then a request: an error reply or nothing for
  // the first, an answer for the second.
  s.write_all(frame_of_body("{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"conformance.no_such_method\","
                            "\"params\":{\"text\":\"\xff\xfe\"}}"));
  s.send(json::object{{"jsonrpc", "2.0"}, {"id", 31}, {"method", "conformance.no_such_method"}, {"params", json::object()}});
  auto utf8_replies = s.replies_to({"30", "31"});
  if (s.stopped()) return stopped(s);
  const auto bad = utf8_replies.find("30");
  if (bad != utf8_replies.end() && !bad->second.as_object().contains("error")) {
    utf8.detail = "answered it with a result: " + util::utf8_lossy(json::serialize(bad->second).substr(0, 200));
  } else if (utf8_replies.count("31") == 0) {
    utf8.detail = unanswered("no answer to the next request");
  } else {
    utf8.passed = true;
    utf8.detail = bad != utf8_replies.end() ? "an error reply" : "dropped";
  }

  // shutdown, then the process must go away on its own (its stdin stays open).
  s.send(json::object{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "shutdown"}, {"params", nullptr}});
  const bool answered = s.replies_to({"3"}).size() == 1;
  const bool exited = answered && s.exits_within(k_exit_after_shutdown);
  if (s.stopped()) return stopped(s);
  if (!answered) {
    shutdown.detail = unanswered("shutdown was not answered");
  } else if (!exited) {
    shutdown.detail = "answered, but still running 2 s later";
  } else {
    shutdown.passed = true;
  }
  if (exited) {
    exit_status.passed = s.exited_cleanly();
    exit_status.detail = "it " + s.exit_description();
  } else if (answered) {
    exit_status.detail = "it did not exit";
  } else if (s.exited()) {
    exit_status.detail = "it " + s.exit_description() + " before shutdown";
  }

  s.settle();
  judge_clean(s);
  cap.passed = s.largest_frame() <= wire::k_max_frame_body && s.framing_error().find("frame too large") == std::string::npos;
  cap.detail = "largest frame " + std::to_string(s.largest_frame()) + " bytes";
  report.stderr_tail = s.stderr_tail();
  return finish();
}

}  // namespace exthost
