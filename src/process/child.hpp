// process/child.hpp — one extension child process: spawn, pipes, stderr, reaping, stopping.
//
// Promises (SPEC A4, §1.1, §1.8):
// - The child starts in its own session (its own process group), with the parent-death
//   signal set to SIGKILL, signal dispositions and mask reset, and every descriptor from 3 up
//   closed on exec; its environment is exactly SpawnSpec::environment.
// - It is always reaped: a reaper coroutine waits on a pidfd and keeps the Child alive until
//   the exit status is collected, so no zombie outlives it. on_exit callbacks run then, on
//   the I/O thread: a child's exit is seen without any RPC. A Child destroyed before that
//   (its context torn down) kills the process and leaves collecting it to the janitor.
// - Nothing here waits on the I/O thread: the reaper polls with WNOHANG, cgroup kills,
//   removals and counter reads are the janitor's (process/janitor.hpp).
// - stderr is pumped into a bounded StderrLog from the moment of spawn.
// - The reaper and the stderr pump do not fail silently: an exception is logged, naming the
//   extension; a reaper that fails kills the child, leaves it to the janitor and announces
//   its exit, a stderr pump that fails closes the pipe.
// - stop() is the signal part of the stop ladder: SIGTERM to the group, a grace period,
//   then SIGKILL to the group, every time. Where the host can make control groups, the
//   child runs in its own (ExtensionCgroup), and every SIGKILL to the group also kills the
//   whole control group: daemons that left the session end with their extension.
// - The child runs under SpawnSpec::limits; once reaped, exit_description() says how it
//   ended and which limit it reached, when that is known.
//
// Threading: create, use and destroy on the I/O thread (the parent-death signal follows the
// forking thread, so spawning from a short-lived thread would kill the child with it).
// exit_probe() and stderr_snapshot() may be used from any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "exthost/limits.hpp"
#include "exthost/result.hpp"
#include "process/cgroup.hpp"
#include "process/exit_probe.hpp"
#include "process/stderr_log.hpp"

namespace exthost::process {

struct SpawnSpec {
  std::string extension_id;                 // for error texts and log lines
  std::string program;                      // absolute path, or a bare name looked up in PATH
  std::vector<std::string> args;
  std::optional<std::filesystem::path> cwd;  // the plugin directory; inherited when empty
  std::vector<std::string> environment;     // "NAME=value", the whole environment
  ResourceLimits limits;                    // rlimits, and a pids control group for `processes`
};

class Child : public std::enable_shared_from_this<Child> {
 public:
  // Spawns the child and starts its reaper and stderr pump. Errors read
  // "Failed to spawn extension '<id>': <os error>".
  static Result<std::shared_ptr<Child>> spawn(const boost::asio::any_io_executor& ex, const SpawnSpec& spec);

  ~Child();  // a child still running here is killed with its group; the janitor collects it
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return m_pid; }
  boost::asio::writable_pipe& stdin_pipe() { return m_stdin; }
  boost::asio::readable_pipe& stdout_pipe() { return m_stdout; }
  const std::shared_ptr<ExitProbe>& exit_probe() const { return m_probe; }

  bool reaped() const { return m_status.has_value(); }
  // The raw wait status once reaped (use WIFEXITED/WIFSIGNALED).
  std::optional<int> wait_status() const { return m_status; }
  // Once reaped: "exited with status 3", "was killed by signal 24 (SIGXCPU): it reached its
  // CPU-time limit of 1 s", "… ; 12 forks were refused at its processes limit of 8"; while
  // running: "is still running". Under limits, they follow: "(limits: CPU 1 s)".
  std::string exit_description() const;
  const ResourceLimits& limits() const { return m_limits; }
  // Whether a control group holds the child's whole subtree (false: its process group only).
  bool contained_by_cgroup() const { return m_cgroup != nullptr; }

  // Runs `fn` on the I/O thread when the child has been reaped (at once if it already has).
  // An exception it throws is logged; the other callbacks still run.
  void on_exit(std::function<void()> fn);

  // Waits until the child has been reaped, or `limit` has passed. True when reaped.
  boost::asio::awaitable<bool> wait_reaped(std::chrono::milliseconds limit);
  // SIGTERM to the group, up to `grace` for the child to exit, then SIGKILL to the group,
  // then waits for the reaper. Never throws; returns when the child is reaped or after a
  // bounded wait if the kernel does not deliver the kill (a process stuck in the D state).
  boost::asio::awaitable<void> stop(std::chrono::milliseconds grace);
  // SIGKILL to the whole group, now. Idempotent; the reaper collects the status.
  void kill_group();
  // Closes the host's end of stdin: the child reads EOF.
  void close_stdin();

  StderrLog::Snapshot stderr_snapshot() const { return m_stderr_log.snapshot(); }

  // How long stop() waits for the reaper after SIGKILL before giving up (and logging).
  static constexpr std::chrono::milliseconds k_reap_after_kill_bound{5000};

 private:
  enum class Task { reaper, stderr_reader };
  // The completion of the reaper or the stderr pump: an exception is an internal error.
  struct TaskEnd {
    std::weak_ptr<Child> child;
    Task task;
    void operator()(std::exception_ptr error) const;
  };

  Child(const boost::asio::any_io_executor& ex, std::string extension_id);
  static boost::asio::awaitable<void> reap(std::shared_ptr<Child> self);
  // Wakes wait_reaped() and runs the on_exit callbacks.
  void announce_exit();
  void run_exit_callback(const std::function<void()>& fn) const;
  static boost::asio::awaitable<void> pump_stderr(std::shared_ptr<Child> self);
  void signal_group(int sig);

  std::string m_extension_id;
  pid_t m_pid = -1;
  boost::asio::writable_pipe m_stdin;
  boost::asio::readable_pipe m_stdout;
  boost::asio::readable_pipe m_stderr;
  std::shared_ptr<ExitProbe> m_probe;
  StderrLog m_stderr_log;
  ResourceLimits m_limits;
  std::unique_ptr<ExtensionCgroup> m_cgroup;      // null where the host cannot make one
  std::optional<int> m_status;                    // set by the reaper
  double m_cpu_seconds = 0;                       // user + system, set by the reaper
  std::uint64_t m_forks_refused = 0;              // by the pids controller, set by the reaper
  boost::asio::steady_timer m_exited_event;       // cancelled when reaped: a one-shot event
  std::vector<std::function<void()>> m_on_exit;
};

}  // namespace exthost::process
