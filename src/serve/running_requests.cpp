// serve/running_requests.cpp — a small multimap under a mutex, bounded by its capacity.
#include "serve/running_requests.hpp"

#include <stdexcept>
#include <utility>

namespace exthost::server {

std::string string_id_key(std::string_view value) { return "s" + std::string(value); }

std::string number_id_key(std::string_view raw) { return "n" + std::string(raw); }

RunningRequests::Handle RunningRequests::add(std::string key) {
  std::lock_guard lock(m_mutex);
  if (m_entries.size() >= m_capacity) throw std::length_error("more running requests than the in-flight cap");
  Handle handle{std::move(key), m_next_serial++, std::stop_source()};
  m_entries.emplace(handle.key, Entry{handle.serial, handle.source});
  return handle;
}

void RunningRequests::remove(const Handle& handle) {
  std::lock_guard lock(m_mutex);
  auto [first, last] = m_entries.equal_range(handle.key);
  for (auto it = first; it != last; ++it) {
    if (it->second.serial == handle.serial) {
      m_entries.erase(it);
      return;
    }
  }
}

std::size_t RunningRequests::cancel(const std::string& key) {
  std::lock_guard lock(m_mutex);
  std::size_t n = 0;
  auto [first, last] = m_entries.equal_range(key);
  for (auto it = first; it != last; ++it) {
    it->second.source.request_stop();
    ++n;
  }
  return n;
}

std::size_t RunningRequests::size() const {
  std::lock_guard lock(m_mutex);
  return m_entries.size();
}

}  // namespace exthost::server
