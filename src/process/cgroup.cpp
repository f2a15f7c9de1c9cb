#include "process/cgroup.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/janitor.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::process {
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_prefix = "exthost-";
// Rounds of "read the members, kill the new ones" before giving up on a subtree that keeps
// forking faster than it is killed (only possible without cgroup.kill).
constexpr int k_kill_rounds = 1000;
// A busy group is tried again after 1 ms, then twice as long each time.
constexpr std::chrono::milliseconds k_remove_retry_first{1};

// The locks a host holds on its groups' directories, released (closed) once the janitor is
// done with the groups. Shared, so that chores (std::function) can carry them.
struct HeldLocks {
  std::vector<int> fds;
  HeldLocks() = default;
  HeldLocks(const HeldLocks&) = delete;
  HeldLocks& operator=(const HeldLocks&) = delete;
  ~HeldLocks() {
    for (int fd : fds) ::close(fd);
  }
};

// Takes the lock of the group `dir` without waiting: its directory opened and flock()ed
// exclusively. The descriptor, or -1 with errno (EWOULDBLOCK: someone holds it).
int try_lock_group(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

// Whether `fd` (a locked directory) is still the directory at `dir`: a sweeper that took the
// lock first may have removed it before this host's flock went through.
bool still_there(int fd, const fs::path& dir) {
  struct stat by_fd {}, by_path {};
  return ::fstat(fd, &by_fd) == 0 && ::lstat(dir.c_str(), &by_path) == 0 && by_fd.st_dev == by_path.st_dev &&
         by_fd.st_ino == by_path.st_ino;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

bool contains_word(const std::string& text, std::string_view word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_file(const fs::path& p, std::string_view text) {
  std::ofstream out(p);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::vector<pid_t> members(const fs::path& dir) {
  std::vector<pid_t> out;
  std::istringstream in(read_file(dir / "cgroup.procs"));
  long pid = 0;
  while (in >> pid) out.push_back(static_cast<pid_t>(pid));
  return out;
}

void kill_members(const fs::path& dir) {
  if (fs::exists(dir / "cgroup.kill") && write_file(dir / "cgroup.kill", "1")) return;
  std::set<pid_t> killed;
  for (int round = 0; round < k_kill_rounds; ++round) {
    bool any_new = false;
    for (pid_t pid : members(dir)) {
      if (killed.insert(pid).second) {
        ::kill(pid, SIGKILL);
        any_new = true;
      }
    }
    if (!any_new) return;
  }
}

// Removes what it can of `dirs` now; true when none is left. A group whose killed processes
// are still exiting is busy, and stays.
bool try_remove(std::vector<fs::path>& dirs) {
  std::erase_if(dirs, [](const fs::path& d) {
    if (::rmdir(d.c_str()) == 0 || errno == ENOENT) return true;
    if (errno == EBUSY) return false;
    util::log().debug("cgroup {} not removed: {}", d.string(), util::os_error_text(errno));
    return true;
  });
  return dirs.empty();
}

// On the janitor: tries busy groups again on a timer, then leaves them to the next host's
// sweep. Their locks are held until then.
asio::awaitable<void> retry_removal(std::vector<fs::path> dirs, [[maybe_unused]] std::shared_ptr<HeldLocks> locks) {
  asio::steady_timer retry(co_await asio::this_coro::executor);
  auto delay = k_remove_retry_first;
  for (int attempt = 2;; ++attempt) {
    retry.expires_after(delay);
    auto [ec] = co_await retry.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec || try_remove(dirs)) co_return;
    if (attempt == ExtensionCgroup::k_remove_attempts) {
      for (const auto& d : dirs) util::log().debug("cgroup {} still busy; the next host removes it", d.string());
      co_return;
    }
    delay = std::min(delay * 2, ExtensionCgroup::k_remove_retry_max);
  }
}

// On the janitor: removes `dirs` now, those still busy later; `locks` are released once the
// groups are gone or given up.
void remove_groups(std::vector<fs::path> dirs, std::shared_ptr<HeldLocks> locks = nullptr) {
  if (!try_remove(dirs)) janitor::spawn(retry_removal(std::move(dirs), std::move(locks)));
}

// On the janitor: kills what is in a stale group this host has locked, and removes it.
void remove_stale(const fs::path& dir, int lock_fd) {
  auto locks = std::make_shared<HeldLocks>();
  locks->fds.push_back(lock_fd);
  kill_members(dir);
  remove_groups({dir}, std::move(locks));
}

// The host pid in a group's name, exthost-<pid>-…; none for another name.
std::optional<pid_t> host_of(const std::string& name) {
  if (name.rfind(k_prefix, 0) != 0) return std::nullopt;
  const auto rest = name.substr(k_prefix.size());
  const auto dash = rest.find('-');
  if (dash == std::string::npos || dash == 0) return std::nullopt;
  try {
    std::size_t used = 0;
    const long pid = std::stol(rest.substr(0, dash), &used);
    if (used != dash || pid <= 0) return std::nullopt;
    return static_cast<pid_t>(pid);
  } catch (...) {
    return std::nullopt;
  }
}

// Set when making a group in the unified tree failed for good: containment falls back to the
// process group from then on, without another attempt per spawn; why, for the warnings.
std::atomic<bool> g_unified_unusable{false};
std::mutex g_unusable_mutex;
std::string g_unusable_reason;  // guarded by g_unusable_mutex

CgroupSupport probe() {
  CgroupSupport s;
  // The host's own groups: "0::/path" (v2), "N:ctrl,ctrl:/path" (v1).
  std::optional<std::string> own_v2, own_pids;
  {
    std::istringstream in(read_file("/proc/self/cgroup"));
    std::string line;
    while (std::getline(in, line)) {
      const auto first = line.find(':');
      const auto second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      const std::string controllers = line.substr(first + 1, second - first - 1);
      const std::string path = line.substr(second + 1);
      if (line.compare(0, first, "0") == 0 && controllers.empty()) own_v2 = path;
      for (const auto& c : split(controllers, ',')) {
        if (c == "pids") own_pids = path;
      }
    }
  }
  // Where each tree is mounted: mountinfo's fifth field, and after " - " the type and options.
  std::optional<fs::path> v2_mount, pids_mount;
  {
    std::istringstream in(read_file("/proc/self/mountinfo"));
    std::string line;
    while (std::getline(in, line)) {
      const auto dash = line.find(" - ");
      if (dash == std::string::npos) continue;
      const auto fields = split(line.substr(0, dash), ' ');
      const auto tail = split(line.substr(dash + 3), ' ');
      if (fields.size() < 5 || tail.size() < 3) continue;
      if (tail[0] == "cgroup2" && !v2_mount) v2_mount = fields[4];
      if (tail[0] == "cgroup" && !pids_mount) {
        for (const auto& opt : split(tail[2], ',')) {
          if (opt == "pids") pids_mount = fields[4];
        }
      }
    }
  }
  // The group's directory: its path below the tree's mount point.
  auto group_dir = [](const fs::path& mount, const std::string& own) { return mount / fs::path(own).relative_path(); };
  // Candidates only: whether the host may make groups there is learnt at the first mkdir.
  if (v2_mount && own_v2) {
    const fs::path dir = group_dir(*v2_mount, *own_v2);
    if (::access(dir.c_str(), W_OK) == 0) {
      s.unified = dir;
      if (contains_word(read_file(dir / "cgroup.subtree_control"), "pids")) s.pids = dir;
    }
  }
  if (!s.pids && pids_mount && own_pids) {
    const fs::path dir = group_dir(*pids_mount, *own_pids);
    if (::access(dir.c_str(), W_OK) == 0) s.pids = dir;
  }
  return s;
}

std::string safe_name(const std::string& id) {
  std::string out;
  for (char c : id) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') ? c : '_';
  return out;
}

// The next name for a group of this host: exthost-<pid>-<sequence>-<extension id>.
std::string group_name(const std::string& extension_id) {
  static std::atomic<std::uint64_t> sequence{0};
  return std::string(k_prefix) + std::to_string(::getpid()) + "-" + std::to_string(++sequence) + "-" +
         safe_name(extension_id);
}

// A group made and locked (fd), or why not (err): EEXIST, the name is in use (a stale group
// in the way was handed to the janitor for removal); EWOULDBLOCK or ENOENT, a sweeper took
// the new group first and removes it; anything else, the tree refuses.
struct Made {
  int fd = -1;
  int err = 0;
};

Made make_locked_group(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0) {
    const int err = errno;
    if (err != EEXIST) return Made{-1, err};
    // Left by a host with this pid that no longer runs (a crash, then the pid was reused),
    // or made by a live host with the same pid in another pid namespace. Only a live host
    // holds its group's lock.
    const int stale = try_lock_group(dir);
    if (stale >= 0) {
      util::log().warn("control group {} is in the way: its host no longer runs; it is removed, and another name "
                       "taken",
                       dir.string());
      janitor::post([dir, stale] { remove_stale(dir, stale); });
    }
    return Made{-1, EEXIST};
  }
  // Locked before anything runs in it. A sweeper of another host may have taken the lock
  // in between (it removes the group), or even removed it already.
  const int fd = try_lock_group(dir);
  if (fd < 0) return Made{-1, errno == EWOULDBLOCK ? EWOULDBLOCK : ENOENT};
  if (!still_there(fd, dir)) {
    ::close(fd);
    return Made{-1, ENOENT};
  }
  return Made{fd, 0};
}

}  // namespace

const CgroupSupport& cgroup_support() {
  static const CgroupSupport support = probe();
  return support;
}

void sweep_stale_groups(const fs::path& base) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    const auto host = host_of(name);
    if (!host || !entry.is_directory(ec)) continue;
    // A live host holds the lock of each of its groups, whatever pid namespace it runs in.
    const int fd = try_lock_group(entry.path());
    if (fd < 0) continue;
    // Hosts older than these locks took none: a group whose named host still runs here is
    // left to it (it is swept once that pid has ended). A group with this host's own pid is
    // not this host's (it would hold the lock): a host before it had the same pid.
    if (*host != ::getpid() && (::kill(*host, 0) == 0 || errno != ESRCH)) {
      ::close(fd);
      continue;
    }
    util::log().info("removing control group {}: the host that made it no longer runs", name);
    remove_stale(entry.path(), fd);
  }
}

namespace {
std::once_flag g_unified_swept, g_pids_swept;

// Each tree is swept once per host process, on the janitor.
void sweep_once(std::once_flag& flag, const fs::path& base) {
  std::call_once(flag, [&] { janitor::post([base] { sweep_stale_groups(base); }); });
}
}  // namespace

void prepare_cgroups() {
  const auto& support = cgroup_support();
  if (support.unified) sweep_once(g_unified_swept, *support.unified);
}

Result<std::unique_ptr<ExtensionCgroup>> ExtensionCgroup::create(const std::string& extension_id,
                                                                 std::optional<std::uint64_t> pids_max) {
  CgroupSupport support = cgroup_support();
  const bool unusable = support.unified && g_unified_unusable.load(std::memory_order_relaxed);
  if (unusable) {
    if (support.pids == support.unified) support.pids.reset();
    support.unified.reset();
  }
  if (pids_max && !support.pids) {
    return Error::extension("Extension '" + extension_id +
                            "' asks for a processes limit, but this host has no writable pids control group "
                            "(cgroup v2 with the pids controller delegated, or the v1 pids hierarchy)");
  }
  if (!support.unified && !pids_max) {
    if (unusable) {
      std::lock_guard lock(g_unusable_mutex);
      util::log().warn("Extension '{}' runs without a control group of its own (contained_by_cgroup: false): {}",
                       extension_id, g_unusable_reason);
    }
    return std::unique_ptr<ExtensionCgroup>();
  }

  // Each tree is swept once, when this host first makes a group in it (or at prepare).
  if (support.unified) sweep_once(g_unified_swept, *support.unified);
  if (pids_max && support.pids && support.pids != support.unified) sweep_once(g_pids_swept, *support.pids);

  std::unique_ptr<ExtensionCgroup> group(new ExtensionCgroup());
  // Makes and locks a group of a name not taken yet in `base`. The error says why there is
  // none; `for_good` whether the tree is unusable (not merely short of a free name).
  bool for_good = false;
  auto make = [&](const fs::path& base, bool joined_by_write) -> Result<fs::path> {
    for (int attempt = 1;; ++attempt) {
      const fs::path dir = base / group_name(extension_id);
      const Made made = make_locked_group(dir);
      if (made.fd >= 0) {
        group->m_dirs.push_back(dir);
        group->m_locks.push_back(made.fd);
        if (joined_by_write) group->m_join_files.push_back((dir / "cgroup.procs").string());
        return dir;
      }
      const int err = made.err;
      if (err != EEXIST && err != EWOULDBLOCK && err != ENOENT) {
        for_good = true;
        return Error::extension("Extension '" + extension_id + "': cannot make its control group " + dir.string() +
                                ": " + util::os_error_text(err));
      }
      if (attempt == k_name_attempts) {
        return Error::extension("Extension '" + extension_id + "': no free name for its control group under " +
                                base.string() + " after " + std::to_string(k_name_attempts) +
                                " attempts (each was in use by another host)");
      }
    }
  };
  if (support.unified) {
    auto dir = make(*support.unified, false);
    if (dir) {
      group->m_unified_dir = *dir;
    } else {
      if (for_good) {
        {
          std::lock_guard lock(g_unusable_mutex);
          g_unusable_reason = dir.error().message;
        }
        g_unified_unusable.store(true, std::memory_order_relaxed);
        if (support.pids == support.unified) support.pids.reset();
      }
      if (pids_max && (!support.pids || support.pids == support.unified)) return std::move(dir).error();
      if (!pids_max) {
        util::log().warn("{}; it runs without a control group of its own (contained_by_cgroup: false): daemons "
                         "it leaves may outlive it{}",
                         dir.error().message,
                         for_good ? ", and so may those of every later extension of this host" : "");
        return std::unique_ptr<ExtensionCgroup>();
      }
    }
  }
  if (pids_max) {
    fs::path dir;
    if (support.pids == support.unified) {
      dir = *group->m_unified_dir;
    } else {
      auto made = make(*support.pids, true);
      if (!made) return std::move(made).error();
      dir = *made;
    }
    if (!write_file(dir / "pids.max", std::to_string(*pids_max))) {
      return Error::extension("Extension '" + extension_id + "': cannot set pids.max in " + dir.string() + ": " +
                              util::os_error_text(errno));
    }
    group->m_pids_dir = dir;
  }
  return group;
}

ExtensionCgroup::~ExtensionCgroup() {
  if (m_dirs.empty()) return;
  // The locks go with the chore: another host's sweep leaves the groups alone until the
  // janitor has removed them or given up.
  auto locks = std::make_shared<HeldLocks>();
  locks->fds = std::move(m_locks);
  janitor::post([dirs = std::vector<fs::path>(m_dirs.rbegin(), m_dirs.rend()), locks = std::move(locks)] {
    for (const auto& dir : dirs) kill_members(dir);
    remove_groups(dirs, locks);
  });
}

void ExtensionCgroup::kill_all() {
  if (m_dirs.empty()) return;
  janitor::post([dirs = m_dirs] {
    for (const auto& dir : dirs) kill_members(dir);
  });
}

std::uint64_t ExtensionCgroup::read_forks_refused() const {
  if (!m_pids_dir) return 0;
  std::istringstream in(read_file(*m_pids_dir / "pids.events"));
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "max") return value;
  }
  return 0;
}

}  // namespace exthost::process
