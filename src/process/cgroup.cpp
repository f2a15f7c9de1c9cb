#include "process/cgroup.hpp"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::process {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_prefix = "exthost-";
// Rounds of "read the members, kill the new ones" before giving up on a subtree that keeps
// forking faster than it is killed (only possible without cgroup.kill).
constexpr int k_kill_rounds = 1000;

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

// Groups whose killed members were still exiting when they were to be removed: retried at
// the next group made or removed, and when the host exits; the next host sweeps the rest.
struct PendingRemovals {
  std::mutex mutex;
  std::vector<fs::path> dirs;
  ~PendingRemovals() {
    for (int attempt = 0; attempt < ExtensionCgroup::k_remove_attempts && !dirs.empty(); ++attempt) {
      std::erase_if(dirs, [](const fs::path& d) { return ::rmdir(d.c_str()) == 0 || errno != EBUSY; });
      if (!dirs.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};
PendingRemovals& pending_removals() {
  static PendingRemovals pending;
  return pending;
}

void retry_pending_removals() {
  auto& p = pending_removals();
  std::lock_guard lock(p.mutex);
  std::erase_if(p.dirs, [](const fs::path& d) { return ::rmdir(d.c_str()) == 0 || errno != EBUSY; });
}

// Never waits: a group still busy is left for a later attempt.
void remove_group(const fs::path& dir) {
  if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
  if (errno == EBUSY) {
    auto& p = pending_removals();
    std::lock_guard lock(p.mutex);
    p.dirs.push_back(dir);
    return;
  }
  util::log().debug("cgroup {} not removed: {}", dir.string(), util::os_error_text(errno));
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
    remove_group(entry.path());
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
}  // namespace

void prepare_cgroups() {
  const auto& support = cgroup_support();
  if (support.unified) std::call_once(g_unified_swept, [&] { sweep_stale(*support.unified); });
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
  if (support.unified) std::call_once(g_unified_swept, [&] { sweep_stale(*support.unified); });
  if (pids_max && support.pids && support.pids != support.unified) {
    std::call_once(g_pids_swept, [&] { sweep_stale(*support.pids); });
  }

  retry_pending_removals();
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
  retry_pending_removals();
  kill_all();
  for (auto it = m_dirs.rbegin(); it != m_dirs.rend(); ++it) remove_group(*it);
}

void ExtensionCgroup::kill_all() {
  for (const auto& dir : m_dirs) kill_members(dir);
}

std::uint64_t ExtensionCgroup::forks_refused() const {
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
