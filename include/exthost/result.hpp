// exthost/result.hpp — errors as values.
//
// Every fallible exthost operation returns Result<T>: either a value or an Error whose
// message names the extension and, where there is one, the method. Messages keep the
// reference design's texts verbatim so that tools matching on them keep working.
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace exthost {

// What kind of failure an Error reports; the CLI maps kinds to exit codes.
enum class ErrorKind {
  usage,      // the caller asked for something malformed
  manifest,   // plugin.json missing, unreadable or invalid; configuration unresolved
  extension,  // the extension failed: spawn, transport, protocol or application error
  timeout,    // a deadline passed before the extension answered
  internal,   // a bug or an environment failure inside the host
  cancelled,  // the caller cancelled the operation (a std::stop_token, Asio cancellation)
};

// Why an operation failed, finer than its kind. Decisions (restart or not, retry or not,
// the hint shown) switch on this, never on the message's wording.
enum class ErrorCause {
  unspecified,        // not classified beyond its kind
  invalid_request,    // the caller asked for something malformed
  not_found,          // no such extension, tool, command or provider
  manifest,           // a manifest or configuration problem
  spawn_failed,       // the child could not be started
  application,        // the extension answered with a JSON-RPC error: see code and data_json
  transport,          // the child's pipes ended or failed (it exited, was killed, wrote garbage)
  protocol,           // the extension answered, but not in the shape the method needs
  timeout,            // a deadline passed first
  cancelled,          // the caller cancelled the operation
  stopped,            // the host stopped the extension (unload, reload, shutdown)
  not_running,        // no child serves, and this path never starts one
  restart_exhausted,  // the restart budget is spent
  blocked,            // a hook blocked the call
  output_limit,       // an answer or its output went past a limit
  internal,           // a bug or an environment failure inside the host
};

// The cause's stable name ("application", "timeout", …), as serve reports it.
inline const char* cause_name(ErrorCause c) {
  switch (c) {
    case ErrorCause::unspecified: return "unspecified";
    case ErrorCause::invalid_request: return "invalid_request";
    case ErrorCause::not_found: return "not_found";
    case ErrorCause::manifest: return "manifest";
    case ErrorCause::spawn_failed: return "spawn_failed";
    case ErrorCause::application: return "application";
    case ErrorCause::transport: return "transport";
    case ErrorCause::protocol: return "protocol";
    case ErrorCause::timeout: return "timeout";
    case ErrorCause::cancelled: return "cancelled";
    case ErrorCause::stopped: return "stopped";
    case ErrorCause::not_running: return "not_running";
    case ErrorCause::restart_exhausted: return "restart_exhausted";
    case ErrorCause::blocked: return "blocked";
    case ErrorCause::output_limit: return "output_limit";
    case ErrorCause::internal: return "internal";
  }
  return "unspecified";
}

struct Error {
  Error() = default;
  Error(ErrorKind k, std::string m, ErrorCause c = ErrorCause::unspecified)
      : kind(k), message(std::move(m)), cause(c) {}

  ErrorKind kind = ErrorKind::internal;
  std::string message;
  ErrorCause cause = ErrorCause::unspecified;
  // The extension that answered or failed, when one did (for a blocked call: the one whose
  // hook blocked it). Empty when none is concerned (an unknown tool).
  std::string extension_id;
  // cause == application: the extension's own JSON-RPC error code, and its `data` as JSON
  // text when it sent one.
  std::optional<std::int64_t> code;
  std::optional<std::string> data_json;

  Error because(ErrorCause c) && {
    cause = c;
    return std::move(*this);
  }
  Error from(std::string id) && {
    if (extension_id.empty()) extension_id = std::move(id);
    return std::move(*this);
  }

  // Each kind with its usual cause; because() refines it (a usage error that is a name not
  // found, an extension error that is a transport failure, …).
  static Error usage(std::string m) { return {ErrorKind::usage, std::move(m), ErrorCause::invalid_request}; }
  static Error manifest(std::string m) { return {ErrorKind::manifest, std::move(m), ErrorCause::manifest}; }
  static Error extension(std::string m) { return {ErrorKind::extension, std::move(m)}; }
  static Error timeout(std::string m) { return {ErrorKind::timeout, std::move(m), ErrorCause::timeout}; }
  static Error internal(std::string m) { return {ErrorKind::internal, std::move(m), ErrorCause::internal}; }
  static Error cancelled(std::string m) { return {ErrorKind::cancelled, std::move(m), ErrorCause::cancelled}; }
};

// A value or an Error. Deliberately small: construct from either, test, take.
template <class T>
class [[nodiscard]] Result {
 public:
  // Empty results exist only because coroutine plumbing needs default construction.
  Result() : m_v(std::in_place_index<1>, Error::internal("empty result")) {}
  Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}  // NOLINT(implicit)
  Result(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}  // NOLINT(implicit)

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(m_v); }
  const T& value() const& { assert(ok()); return std::get<0>(m_v); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(m_v)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& { assert(!ok()); return std::get<1>(m_v); }
  Error&& error() && { assert(!ok()); return std::get<1>(std::move(m_v)); }

 private:
  std::variant<T, Error> m_v;
};

// Result<void>: success carries nothing.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : m_error(std::move(error)), m_failed(true) {}  // NOLINT(implicit)

  bool ok() const { return !m_failed; }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { assert(m_failed); return m_error; }
  Error&& error() && { assert(m_failed); return std::move(m_error); }

 private:
  Error m_error;
  bool m_failed = false;
};

}  // namespace exthost
