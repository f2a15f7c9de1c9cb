// process/launcher.hpp — starting a contained child without copying the host (SPEC A4).
//
// The child is created like vfork(): it shares the host's memory and the calling thread
// waits until it has exec'd, so nothing is copied however large the host is. Between the
// clone and the exec it makes raw system calls only:
//   setsid()                       its own session and process group (pgid == pid)
//   PR_SET_PDEATHSIG = SIGKILL      dies with the thread that launched it…
//   getppid() check                …even if the host died before the prctl took effect
//   every signal to SIG_DFL, empty mask (an ignored SIGPIPE would survive exec)
//   its resource limits (prlimit), then joining its control groups (a write of "0"); on
//   x86-64 the child is instead created inside its unified (v2) group (clone3 with
//   CLONE_INTO_CGROUP), which spares a migration that costs the kernel an RCU grace period
//   dup2 of the three pipe ends onto 0, 1, 2; chdir; close_range(3, ~0, CLOEXEC)
// posix_spawn() would be as cheap but cannot set the parent-death signal.
//
// Threading: call from the thread that will outlive the child (the host's I/O thread): the
// parent-death signal follows the launching thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "exthost/result.hpp"
#include "process/resource_limits.hpp"

namespace exthost::process {

struct Launched {
  pid_t pid = -1;
  int stdin_fd = -1;   // host's write end, close-on-exec
  int stdout_fd = -1;  // host's read end, close-on-exec
  int stderr_fd = -1;  // host's read end, close-on-exec
};

// What the child sets up for itself before exec, beyond the fixed steps above.
struct Confinement {
  std::vector<RlimitSetting> rlimits;
  std::vector<std::string> join_files;  // cgroup.procs files the child always writes "0" to
  // The unified group to create the child in (a directory descriptor), and its cgroup.procs
  // file for the child to join by a write where clone3 cannot place it there.
  int cgroup_fd = -1;
  std::string cgroup_procs_file;
};

// Starts `exe` (a path) with argv[0] = exe, then `args`, and exactly `environment`.
// On failure nothing is left behind (a child that failed to exec is reaped); the error reads
// "Failed to spawn extension '<id>': <os error of the failing step>", with the limit or the
// control group named when one of those steps failed.
Result<Launched> launch(const std::string& extension_id, const std::string& exe, const std::vector<std::string>& args,
                        const std::optional<std::filesystem::path>& cwd, const std::vector<std::string>& environment,
                        const Confinement& confinement = {});

}  // namespace exthost::process
