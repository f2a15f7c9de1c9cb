// proc.hpp — /proc readings for tests: descriptor counts, zombies, process state, memory
// and input of another process.
#pragma once

#include <chrono>
#include <vector>

#include <dirent.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace exthost::testing {

inline int open_fd_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
  }
  return n - 1;  // the directory stream's own descriptor
}

// Descriptors of this process open on a control-group file system: a host holds one on
// each of its extensions' groups (its lock) until the janitor has removed the group.
inline int cgroup_fd_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      struct statfs fs {};
      if (::fstatfs(std::atoi(e->d_name), &fs) == 0 &&
          (fs.f_type == CGROUP2_SUPER_MAGIC || fs.f_type == CGROUP_SUPER_MAGIC)) {
        ++n;
      }
    }
    ::closedir(d);
  }
  return n;
}

// open_fd_count() once no group lock is held any more (waiting up to `bound` for the janitor
// to remove the groups of extensions already stopped); -1 if locks are still held then.
inline int open_fd_count_without_group_locks(std::chrono::milliseconds bound = std::chrono::milliseconds(10000)) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (cgroup_fd_count() != 0) {
    if (std::chrono::steady_clock::now() > until) return -1;
    ::usleep(10'000);
  }
  return open_fd_count();
}

// State letter of a process ('R', 'S', 'Z', …) and its parent; 0 if there is none.
inline char proc_state(pid_t pid, pid_t* ppid = nullptr) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(f, s)) return 0;
  const auto close = s.rfind(')');
  if (close == std::string::npos || close + 2 >= s.size()) return 0;
  std::istringstream rest(s.substr(close + 2));
  char state = 0;
  pid_t parent = 0;
  rest >> state >> parent;
  if (ppid) *ppid = parent;
  return state;
}

inline bool alive(pid_t pid) {
  const char s = proc_state(pid);
  return s != 0 && s != 'Z' && s != 'X';
}

// Zombie children of this process.
inline int zombie_children() {
  int n = 0;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      const pid_t pid = std::atoi(e->d_name);
      if (pid <= 0) continue;
      pid_t parent = 0;
      if (proc_state(pid, &parent) == 'Z' && parent == ::getpid()) ++n;
    }
    ::closedir(d);
  }
  return n;
}

// Whether this process has no zombie child, waiting up to `bound` for collections that run
// on another thread (the janitor collects a child destroyed before its exit was seen).
inline bool no_zombies_within(std::chrono::milliseconds bound = std::chrono::milliseconds(3000)) {
  const auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (zombie_children() == 0) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    ::usleep(10'000);
  }
}

// Live (not zombie) children of this process, by pid.
inline std::vector<int> live_children() {
  std::vector<int> out;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      const pid_t pid = std::atoi(e->d_name);
      if (pid <= 0) continue;
      pid_t parent = 0;
      const char s = proc_state(pid, &parent);
      if (parent == ::getpid() && s != 0 && s != 'Z' && s != 'X') out.push_back(pid);
    }
    ::closedir(d);
  }
  return out;
}

// Whether host-memory bounds can be measured in this build: AddressSanitizer keeps freed
// memory in quarantine on purpose and ThreadSanitizer maps shadow memory for every page
// touched, so RSS under either says nothing about what is retained.
// The optimised build asserts every memory bound; the sanitizer build checks for errors.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool k_memory_is_measurable = false;
#else
inline constexpr bool k_memory_is_measurable = true;
#endif

// A memory field of /proc/<pid>/status in KiB ("VmRSS", "VmHWM": the peak); 0 if unreadable.
inline long status_kib(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return 0;
}

// Resident set size of this process in KiB.
inline long rss_kib() { return status_kib(::getpid(), "VmRSS"); }

// Sets this process's peak resident set size (VmHWM) back to its current size, so that a
// later VmHWM is the peak of what ran in between; false where the kernel does not allow it.
inline bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5" << std::flush;
  return static_cast<bool>(f);
}

// Bytes process `pid` has read so far, from any descriptor (rchar of /proc/<pid>/io); -1 if
// unreadable.
inline long long read_chars(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  long long value = 0;
  while (f >> key >> value) {
    if (key == "rchar:") return value;
  }
  return -1;
}

// The children of process `pid` that are alive.
inline std::vector<pid_t> child_pids(pid_t pid) {
  std::vector<pid_t> out;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      const pid_t p = std::atoi(e->d_name);
      pid_t parent = 0;
      if (p > 0 && alive(p) && proc_state(p, &parent) != 0 && parent == pid) out.push_back(p);
    }
    ::closedir(d);
  }
  return out;
}

}  // namespace exthost::testing
