// process/cgroup.hpp — one control group per extension child, where the host may make one
// (SPEC A4's further layer).
//
// A control group holds every descendant of the child, including daemons that left its
// session and process group, so stopping the extension can kill them all; its pids
// controller bounds how many processes the subtree may have (ResourceLimits::processes).
//
// Where: under the host's own group, in the unified (v2) tree for containment (its
// cgroup.kill ends the whole subtree at once), and in a tree with the pids controller for
// the processes limit (v2 where `pids` is enabled for the host's group's children, else the
// v1 `pids` hierarchy). Nothing writable: no group, and the process group remains the only
// containment (docs/protocol.md states what holds then).
//
// Names: exthost-<host pid>-<sequence>-<extension id>. A host holds a lock on each of its
// groups (flock on the group's directory, taken before anything runs in it, released once
// the group is removed), so whether a group's host still runs is told by its lock, which a
// host in another pid namespace holds just the same, and which no reused pid inherits. The
// first group made by a host also sweeps groups left by hosts that no longer run (killed
// with SIGKILL): their processes are killed and the groups removed. A stale group in the way
// of the name a host is about to use is removed the same way, and the next name taken.
// Containment is never dropped silently: an extension that gets no group is warned about,
// and its Child reports contained_by_cgroup false.
//
// Threading: create and destroy on any one thread; the join paths are read by the launcher.
// Only create() touches the tree on the calling thread (a mkdir and a lock that never
// waits, and pids.max under a processes limit: the child is created inside the group).
// Killing, removing and sweeping are chores of the janitor (process/janitor.hpp): the
// caller never waits on them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::process {

// What this host can make, probed once per process.
struct CgroupSupport {
  std::optional<std::filesystem::path> unified;  // writable v2 group of the host
  std::optional<std::filesystem::path> pids;     // writable group of the host with the pids controller
};
const CgroupSupport& cgroup_support();
// Probes the trees and sweeps the unified one now, so that the host's first spawn does not
// (Host does this when it starts).
void prepare_cgroups();
// Kills what is left in the groups under `base` whose host no longer runs, and removes them
// (the removal of a busy one goes on on the janitor). A group's host runs while the group's
// lock is held; a group without a held lock whose named pid runs in this pid namespace is
// left alone too, since hosts before the locks took none. Blocks on the cgroup tree: the
// janitor runs it (tests call it directly).
void sweep_stale_groups(const std::filesystem::path& base);

class ExtensionCgroup {
 public:
  // Makes the extension's groups. nullptr when no tree is writable and no processes limit
  // is asked. Error when `pids_max` is asked but no pids controller is writable.
  static Result<std::unique_ptr<ExtensionCgroup>> create(const std::string& extension_id,
                                                         std::optional<std::uint64_t> pids_max);
  ~ExtensionCgroup();  // the janitor kills what is left, then removes the groups
  ExtensionCgroup(const ExtensionCgroup&) = delete;
  ExtensionCgroup& operator=(const ExtensionCgroup&) = delete;

  // The unified group's directory, to create the child in (clone3's CLONE_INTO_CGROUP), or
  // to join through its cgroup.procs; none where the unified tree is not writable.
  const std::optional<std::filesystem::path>& unified_dir() const { return m_unified_dir; }
  // The cgroup.procs files of groups in other trees (the v1 pids group), which the child
  // always joins by writing "0" before exec (a migration: an RCU grace period).
  const std::vector<std::string>& join_files() const { return m_join_files; }
  // SIGKILL to every process in the groups, by the janitor, at once (idempotent).
  void kill_all();
  // How many forks the pids controller refused (its pids.events "max"); 0 without one.
  // Reads a cgroup file: call it off the I/O thread.
  std::uint64_t read_forks_refused() const;
  bool has_pids_limit() const { return m_pids_dir.has_value(); }

  // Attempts to remove a group whose killed processes are still exiting: 1 ms apart at first,
  // twice as long each time up to k_remove_retry_max (about 8 s in all); what remains is
  // swept by the next host.
  static constexpr int k_remove_attempts = 40;
  static constexpr std::chrono::milliseconds k_remove_retry_max{250};
  // Names tried for one group when each is in use (another host's group, or a stale one in
  // the way, which is removed meanwhile); the extension then runs without a group, warned.
  static constexpr int k_name_attempts = 8;

 private:
  ExtensionCgroup() = default;
  std::vector<std::filesystem::path> m_dirs;
  std::optional<std::filesystem::path> m_unified_dir;
  std::optional<std::filesystem::path> m_pids_dir;
  std::vector<std::string> m_join_files;
  std::vector<int> m_locks;  // the groups' locked directories, handed to the janitor at the end
};

}  // namespace exthost::process
