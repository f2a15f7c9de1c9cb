// exthost/result.hpp — errors as values.
//
// Every fallible exthost operation returns Result<T>: either a value or an Error whose
// message names the extension and, where there is one, the method. Messages keep the
// reference design's texts verbatim so that tools matching on them keep working.
#pragma once

#include <cassert>
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
};

struct Error {
  ErrorKind kind = ErrorKind::internal;
  std::string message;

  static Error usage(std::string m) { return {ErrorKind::usage, std::move(m)}; }
  static Error manifest(std::string m) { return {ErrorKind::manifest, std::move(m)}; }
  static Error extension(std::string m) { return {ErrorKind::extension, std::move(m)}; }
  static Error timeout(std::string m) { return {ErrorKind::timeout, std::move(m)}; }
  static Error internal(std::string m) { return {ErrorKind::internal, std::move(m)}; }
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
