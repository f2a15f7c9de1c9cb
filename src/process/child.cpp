#include "process/child.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <fcntl.h>
#include <cstring>
#include <csignal>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/environment.hpp"
#include "process/janitor.hpp"
#include "process/launcher.hpp"
#include "util/exception_text.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::process {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

Error spawn_error(const std::string& id, int err) {
  return Error::extension("Failed to spawn extension '" + id + "': " + util::os_error_text(err)).because(ErrorCause::spawn_failed);
}

}  // namespace

Child::Child(const asio::any_io_executor& ex, std::string extension_id)
    : m_extension_id(std::move(extension_id)),
      m_stdin(ex),
      m_stdout(ex),
      m_stderr(ex),
      m_stderr_log([id = m_extension_id](std::string_view line, bool truncated) {
        util::log().debug("extension '{}' stderr{}: {}", id, truncated ? " (truncated)" : "", line);
      }),
      m_exited_event(ex, asio::steady_timer::time_point::max()) {}

Child::~Child() {  // m_cgroup's destructor then has the rest of the subtree killed and removed
  if (m_pid > 0 && !m_status) {
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL);
    // Collected off this thread: a process in an unkillable state, or traced, can take long.
    janitor::reap(m_pid);
  }
}

Result<std::shared_ptr<Child>> Child::spawn(const asio::any_io_executor& ex, const SpawnSpec& spec) {
  std::string exe = spec.program;
  if (exe.find('/') == std::string::npos) {
    exe = find_in_path(spec.program);
    if (exe.empty()) return spawn_error(spec.extension_id, ENOENT);
  }
  std::shared_ptr<Child> child(new Child(ex, spec.extension_id));
  child->m_limits = spec.limits;
  auto cgroup = ExtensionCgroup::create(spec.extension_id, spec.limits.processes);
  if (!cgroup) return std::move(cgroup).error();
  child->m_cgroup = std::move(cgroup).value();
  Confinement confinement;
  confinement.rlimits = rlimit_settings(spec.limits);
  int cgroup_fd = -1;
  if (child->m_cgroup) {
    confinement.join_files = child->m_cgroup->join_files();
    if (const auto& dir = child->m_cgroup->unified_dir()) {
      cgroup_fd = ::open(dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      confinement.cgroup_fd = cgroup_fd;
      confinement.cgroup_procs_file = (*dir / "cgroup.procs").string();
    }
  }
  auto launched = launch(spec.extension_id, exe, spec.args, spec.cwd, spec.environment, confinement);
  if (cgroup_fd >= 0) ::close(cgroup_fd);
  if (!launched) return std::move(launched).error();
  child->m_pid = launched->pid;
  child->m_stdin.assign(launched->stdin_fd);
  child->m_stdout.assign(launched->stdout_fd);
  child->m_stderr.assign(launched->stderr_fd);
  child->m_probe = std::make_shared<ExitProbe>(child->m_pid);
  asio::co_spawn(ex, reap(child), TaskEnd{child, Task::reaper});
  asio::co_spawn(ex, pump_stderr(child), TaskEnd{child, Task::stderr_reader});
  return child;
}

namespace {
asio::awaitable<std::uint64_t> read_forks_refused(const ExtensionCgroup* group) {
  co_return group->read_forks_refused();
}
}  // namespace

asio::awaitable<void> Child::reap(std::shared_ptr<Child> self) {
  auto ex = co_await asio::this_coro::executor;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, self->m_pid, 0));
  std::optional<asio::posix::stream_descriptor> pidfd;
  if (fd >= 0) pidfd.emplace(ex, fd);
  asio::steady_timer poll(ex);
  bool woken_by_pidfd = false;
  bool count_forks = self->m_cgroup && self->m_cgroup->has_pids_limit();
  for (;;) {
    // Under a processes limit the refused forks are counted once the child has exited and
    // before its status is collected, so that nobody learns of the exit without them. The
    // count is a cgroup file: read on the janitor.
    if (count_forks) {
      siginfo_t info{};
      const int w = ::waitid(P_PID, static_cast<id_t>(self->m_pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (w == 0 && info.si_pid == self->m_pid) {
        self->m_forks_refused = co_await asio::co_spawn(janitor::executor(), read_forks_refused(self->m_cgroup.get()),
                                                        asio::use_awaitable);
        count_forks = false;
      } else if (w < 0 && errno != EINTR) {
        count_forks = false;  // not ours any more: wait4 says so below
      }
    }
    int status = 0;
    struct rusage usage {};
    const pid_t r = count_forks ? 0 : ::wait4(self->m_pid, &status, WNOHANG, &usage);
    if (r == self->m_pid) {
      self->m_status = status;
      auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
      self->m_cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
      break;
    }
    if (r < 0 && errno != EINTR) {  // not ours any more: nothing left to collect
      self->m_status = -1;
      break;
    }
    // Readiness is only a hint: the loop re-checks with WNOHANG. A pidfd that fired without
    // a status to collect (a traced child's exit goes to its tracer first) stays readable, so
    // from then on the loop polls instead of spinning.
    if (woken_by_pidfd) pidfd.reset();
    if (pidfd) {
      auto [ec] = co_await pidfd->async_wait(asio::posix::descriptor_base::wait_read,
                                              asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::operation_aborted) co_return;
      woken_by_pidfd = true;
    } else {
      poll.expires_after(std::chrono::milliseconds(20));
      auto [ec] = co_await poll.async_wait(asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::operation_aborted) co_return;
    }
  }
  self->announce_exit();
}

void Child::announce_exit() {
  m_exited_event.cancel();
  auto callbacks = std::move(m_on_exit);
  m_on_exit.clear();
  for (auto& fn : callbacks) run_exit_callback(fn);
}

void Child::run_exit_callback(const std::function<void()>& fn) const {
  try {
    fn();
  } catch (...) {
    util::log().error("extension '{}': an exit callback failed: {}", m_extension_id,
                      util::exception_text(std::current_exception()));
  }
}

void Child::TaskEnd::operator()(std::exception_ptr error) const {
  if (!error) return;
  auto self = child.lock();
  if (!self) return;  // destroyed meanwhile: ~Child killed it and left it to the janitor
  const char* name = task == Task::reaper ? "reaper" : "stderr reader";
  util::log().error("internal error in the {} of extension '{}': {}", name, self->m_extension_id,
                    util::exception_text(error));
  if (task == Task::stderr_reader) {
    // Nobody reads the pipe any more: the child gets EPIPE rather than blocking on it.
    boost::system::error_code ignored;
    self->m_stderr.close(ignored);
    return;
  }
  if (self->m_status) return;  // collected already
  // Unwatched, the child is ended: killed, collected by the janitor, and its exit announced
  // now so that nothing waits for it (its transport ends as at EOF).
  self->signal_group(SIGKILL);
  janitor::reap(self->m_pid);
  self->m_status = -1;
  self->announce_exit();
}

asio::awaitable<void> Child::pump_stderr(std::shared_ptr<Child> self) {
  std::array<char, 16 * 1024> buf{};
  for (;;) {
    auto [ec, n] = co_await self->m_stderr.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (n > 0) self->m_stderr_log.feed(std::string_view(buf.data(), n));
    if (ec) break;
  }
  self->m_stderr_log.finish();
  const auto snap = self->m_stderr_log.snapshot();
  if (snap.suppressed_bytes > 0) {
    util::log().debug(
        "extension '{}': Extension stderr exceeded the forwarding budget; further bytes counted only "
        "(suppressed_bytes={})",
        self->m_extension_id, snap.suppressed_bytes);
  }
}

void Child::on_exit(std::function<void()> fn) {
  if (m_status) {
    asio::post(m_exited_event.get_executor(),
               [self = shared_from_this(), fn = std::move(fn)] { self->run_exit_callback(fn); });
  } else {
    m_on_exit.push_back(std::move(fn));
  }
}

asio::awaitable<bool> Child::wait_reaped(std::chrono::milliseconds limit) {
  if (m_status) co_return true;
  asio::steady_timer deadline(co_await asio::this_coro::executor, limit);
  co_await (m_exited_event.async_wait(asio::as_tuple(asio::use_awaitable)) ||
            deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  co_return m_status.has_value();
}

std::string Child::exit_description() const {
  std::string out;
  if (!m_status) {
    out = "is still running";
  } else if (*m_status == -1) {
    out = "ended (its status was collected elsewhere)";
  } else if (WIFEXITED(*m_status)) {
    out = "exited with status " + std::to_string(WEXITSTATUS(*m_status));
  } else if (WIFSIGNALED(*m_status)) {
    const int sig = WTERMSIG(*m_status);
    const char* name = ::sigabbrev_np(sig);
    out = "was killed by signal " + std::to_string(sig) + (name != nullptr ? std::string(" (SIG") + name + ")" : "");
    const bool cpu_limit = m_limits.cpu_seconds &&
                           (sig == SIGXCPU || (sig == SIGKILL && m_cpu_seconds >= static_cast<double>(*m_limits.cpu_seconds)));
    if (cpu_limit) out += ": it reached its CPU-time limit of " + std::to_string(*m_limits.cpu_seconds) + " s";
  }
  if (m_cgroup && m_limits.processes) {
    if (const auto refused = m_forks_refused; refused > 0) {
      out += "; " + std::to_string(refused) + " fork" + (refused == 1 ? " was" : "s were") +
             " refused at its processes limit of " + std::to_string(*m_limits.processes);
    }
  }
  if (m_limits.any()) out += " (limits: " + describe_limits(m_limits) + ")";
  return out;
}

void Child::signal_group(int sig) {
  if (sig == SIGKILL && m_cgroup) m_cgroup->kill_all();
  if (m_pid <= 0) return;
  ::kill(-m_pid, sig);
  if (!m_status) ::kill(m_pid, sig);  // in case the group is gone but the leader is not
}

asio::awaitable<void> Child::stop(std::chrono::milliseconds grace) {
  auto self = shared_from_this();
  if (!m_status) {
    signal_group(SIGTERM);
    co_await wait_reaped(grace);
  }
  signal_group(SIGKILL);  // always: a grandchild may ignore SIGTERM after the leader exits
  if (!m_status && !co_await wait_reaped(k_reap_after_kill_bound)) {
    util::log().error("extension '{}': pid {} not reaped {} ms after SIGKILL", m_extension_id, m_pid,
                      k_reap_after_kill_bound.count());
  }
}

void Child::kill_group() { signal_group(SIGKILL); }

void Child::close_stdin() {
  boost::system::error_code ignored;
  m_stdin.close(ignored);
}

}  // namespace exthost::process
