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

// On the janitor: tries busy groups again on a timer, then leaves them to the next host's sweep.
asio::awaitable<void> retry_removal(std::vector<fs::path> dirs) {
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

// On the janitor: removes `dirs` now, those still busy later.
void remove_groups(std::vector<fs::path> dirs) {
  if (!try_remove(dirs)) janitor::spawn(retry_removal(std::move(dirs)));
}

// Groups of hosts that no longer run: their processes outlived a host killed with SIGKILL.
void sweep_stale(const fs::path& base) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(k_prefix, 0) != 0 || !entry.is_directory(ec)) continue;
    const auto rest = name.substr(k_prefix.size());
    const auto dash = rest.find('-');
    if (dash == std::string::npos) continue;
    pid_t host = 0;
    try {
      host = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    } catch (...) {
      continue;
    }
    if (host <= 0 || host == ::getpid() || ::kill(host, 0) == 0 || errno != ESRCH) continue;
    util::log().info("removing control group {} left by host process {}, which no longer runs", name, host);
    kill_members(entry.path());
    remove_groups({entry.path()});
  }
}

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

}  // namespace

const CgroupSupport& cgroup_support() {
  static const CgroupSupport support = probe();
  return support;
}

namespace {
// Set when making a group in the unified tree failed: containment falls back to the process
// group from then on, without another attempt per spawn.
std::atomic<bool> g_unified_unusable{false};
std::once_flag g_unified_swept, g_pids_swept;

// Each tree is swept once per host process, on the janitor.
void sweep_once(std::once_flag& flag, const fs::path& base) {
  std::call_once(flag, [&] { janitor::post([base] { sweep_stale(base); }); });
}
}  // namespace

void prepare_cgroups() {
  const auto& support = cgroup_support();
  if (support.unified) sweep_once(g_unified_swept, *support.unified);
}

Result<std::unique_ptr<ExtensionCgroup>> ExtensionCgroup::create(const std::string& extension_id,
                                                                 std::optional<std::uint64_t> pids_max) {
  CgroupSupport support = cgroup_support();
  if (g_unified_unusable.load(std::memory_order_relaxed)) {
    if (support.pids == support.unified) support.pids.reset();
    support.unified.reset();
  }
  if (pids_max && !support.pids) {
    return Error::extension("Extension '" + extension_id +
                            "' asks for a processes limit, but this host has no writable pids control group "
                            "(cgroup v2 with the pids controller delegated, or the v1 pids hierarchy)");
  }
  if (!support.unified && !pids_max) return std::unique_ptr<ExtensionCgroup>();

  // Each tree is swept once, when this host first makes a group in it (or at prepare).
  if (support.unified) sweep_once(g_unified_swept, *support.unified);
  if (pids_max && support.pids && support.pids != support.unified) sweep_once(g_pids_swept, *support.pids);

  static std::atomic<std::uint64_t> sequence{0};
  const std::string name = std::string(k_prefix) + std::to_string(::getpid()) + "-" + std::to_string(++sequence) +
                           "-" + safe_name(extension_id);
  std::unique_ptr<ExtensionCgroup> group(new ExtensionCgroup());
  auto make = [&](const fs::path& base, bool joined_by_write) -> Result<fs::path> {
    const fs::path dir = base / name;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      return Error::extension("Extension '" + extension_id + "': cannot make its control group " + dir.string() +
                              ": " + util::os_error_text(errno));
    }
    group->m_dirs.push_back(dir);
    if (joined_by_write) group->m_join_files.push_back((dir / "cgroup.procs").string());
    return dir;
  };
  if (support.unified) {
    auto dir = make(*support.unified, false);
    if (dir) {
      group->m_unified_dir = *dir;
    } else {
      util::log().debug("{}; containment falls back to process groups", dir.error().message);
      g_unified_unusable.store(true, std::memory_order_relaxed);
      if (support.pids == support.unified) support.pids.reset();
      if (pids_max && !support.pids) return std::move(dir).error();
      if (!pids_max) return std::unique_ptr<ExtensionCgroup>();
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
  janitor::post([dirs = std::vector<fs::path>(m_dirs.rbegin(), m_dirs.rend())] {
    for (const auto& dir : dirs) kill_members(dir);
    remove_groups(dirs);
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
