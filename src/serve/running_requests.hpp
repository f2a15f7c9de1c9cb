// serve/running_requests.hpp — the requests running now, by the id their client gave them,
// each with the stop source that cancels it.
//
// A client cancels a request by naming its id in "$/cancelRequest". The id is matched as
// the client wrote it: a string by its value (escapes decoded), a number by its spelling
// (1 and 1.0 are two ids, as the server echoes each as it came). The set holds one entry
// per running request, added before the request starts and removed once its reply is
// written, so it never holds more entries than requests may run at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

namespace exthost::server {

// The key a string id is matched by: its decoded value.
std::string string_id_key(std::string_view value);
// The key a number id is matched by: its spelling in the frame.
std::string number_id_key(std::string_view raw);

class RunningRequests {
 public:
  // One running request: its key, a serial telling apart requests that share an id, and
  // its stop source (sharing its state with the one kept here: a cancel requests it).
  struct Handle {
    std::string key;
    std::uint64_t serial = 0;
    std::stop_source source;
  };

  // At most `capacity` requests at once (the server's in-flight cap).
  explicit RunningRequests(std::size_t capacity) : m_capacity(capacity) {}

  // Registers a request about to run under `key`, with a fresh stop source. Throws
  // std::length_error when `capacity` requests are registered already: the caller starts
  // no more than that.
  Handle add(std::string key);
  // Forgets the request: its reply was written. A cancel naming it is ignored from now on.
  void remove(const Handle& handle);
  // Requests the stop of every running request registered under `key` (a client that
  // reuses an id cancels all of them); how many there were. Never waits: a stop callback
  // only posts to the host's I/O thread.
  std::size_t cancel(const std::string& key);
  std::size_t size() const;

 private:
  struct Entry {
    std::uint64_t serial;
    std::stop_source source;
  };

  std::size_t m_capacity;
  mutable std::mutex m_mutex;
  std::multimap<std::string, Entry> m_entries;
  std::uint64_t m_next_serial = 1;
};

}  // namespace exthost::server
