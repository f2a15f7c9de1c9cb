// Boost.Process v2 (1.81) is used to launch only; the lifecycle is ours (TOOLCHAIN (e) p4):
// its async_wait can block the I/O thread and its destructor can kill a recycled pid.
// std::filesystem flavour: these two includes must precede it (TOOLCHAIN (b), bug 2).
#define BOOST_PROCESS_USE_STD_FS 1
#include <boost/optional.hpp>
#include <boost/type_traits/remove_pointer.hpp>
// Process v2 headers follow the workaround includes on purpose.
#include <boost/process/v2/posix/default_launcher.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/start_dir.hpp>
#include <boost/process/v2/stdio.hpp>

#include "process/child.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/environment.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::process {
namespace asio = boost::asio;
namespace bp = boost::process::v2;
using namespace asio::experimental::awaitable_operators;

namespace {

// Runs between fork and exec in the child (raw syscalls only: no allocation, no locks) and
// hands the launcher the environment. 1.81 reports the child's errno, not the returned
// code, so each failure returns right after the failing call.
struct Containment {
  const char* const* envp = nullptr;
  pid_t parent = 0;

  template <class Launcher>
  bp::error_code on_setup(Launcher& launcher, const std::filesystem::path&, const char* const*) {
    parent = ::getpid();
    launcher.env = envp;
    return {};
  }

  template <class Launcher>
  bp::error_code on_exec_setup(Launcher&, const std::filesystem::path&, const char* const*) {
    auto fail = [] { return bp::error_code(errno, bp::system_category()); };
    if (::setsid() < 0) return fail();  // own session, own process group (pgid == pid)
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) return fail();
    if (::getppid() != parent) ::_exit(127);  // the host died before the prctl took effect
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);  // SIG_IGN survives exec
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // 1.81's close_all() leaks descriptors below its own error pipe: mark all of them.
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) return fail();
    return {};
  }
};

// The launcher tells the executor's io_context about the fork, and the forked child then
// rebuilds that context's reactor (a new epoll, every descriptor registered again) before
// it may exec — time spent while the host waits. Launching on an idle context of its own
// keeps that work near zero; the pipes stay on the host's context.
asio::any_io_executor launch_executor() {
  static asio::io_context launch_context(1);
  return launch_context.get_executor();
}

Error spawn_error(const std::string& id, int err) {
  return Error::extension("Failed to spawn extension '" + id + "': " + util::os_error_text(err));
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

Child::~Child() {
  if (m_pid > 0 && !m_status) {
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

Result<std::shared_ptr<Child>> Child::spawn(const asio::any_io_executor& ex, const SpawnSpec& spec) {
  std::string exe = spec.program;
  if (exe.find('/') == std::string::npos) {
    exe = find_in_path(spec.program);
    if (exe.empty()) return spawn_error(spec.extension_id, ENOENT);
  }
  std::vector<const char*> envp;
  envp.reserve(spec.environment.size() + 1);
  for (const auto& kv : spec.environment) envp.push_back(kv.c_str());
  envp.push_back(nullptr);

  // A failed exec makes the forked copy call exit(), flushing our stdio buffers again.
  std::fflush(nullptr);
  util::log().flush();

  std::shared_ptr<Child> child(new Child(ex, spec.extension_id));
  Containment contain{envp.data()};
  bp::posix::default_launcher launcher;
  bp::error_code ec;
  const std::filesystem::path exe_path(exe);
  auto launch = [&](auto&&... extra) {
    return launcher(launch_executor(), ec, exe_path, spec.args,
                    bp::process_stdio{child->m_stdin, child->m_stdout, child->m_stderr}, extra..., contain);
  };
  auto proc = spec.cwd ? launch(bp::process_start_dir{*spec.cwd}) : launch();
  if (ec) {
    if (launcher.pid > 0) {  // the forked copy that failed to exec is our zombie
      while (::waitpid(launcher.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    return spawn_error(spec.extension_id, ec.value());
  }
  child->m_pid = proc.id();
  proc.detach();  // the lifecycle is ours from here on
  child->m_probe = std::make_shared<ExitProbe>(child->m_pid);
  asio::co_spawn(ex, reap(child), asio::detached);
  asio::co_spawn(ex, pump_stderr(child), asio::detached);
  return child;
}

asio::awaitable<void> Child::reap(std::shared_ptr<Child> self) {
  auto ex = co_await asio::this_coro::executor;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, self->m_pid, 0));
  std::optional<asio::posix::stream_descriptor> pidfd;
  if (fd >= 0) pidfd.emplace(ex, fd);
  asio::steady_timer poll(ex);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(self->m_pid, &status, WNOHANG);
    if (r == self->m_pid) {
      self->m_status = status;
      break;
    }
    if (r < 0 && errno != EINTR) {  // not ours any more: nothing left to collect
      self->m_status = -1;
      break;
    }
    // Readiness is only a hint (a pidfd can fire twice): the loop re-checks with WNOHANG.
    if (pidfd) {
      auto [ec] = co_await pidfd->async_wait(asio::posix::descriptor_base::wait_read,
                                              asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::operation_aborted) co_return;
    } else {
      poll.expires_after(std::chrono::milliseconds(20));
      auto [ec] = co_await poll.async_wait(asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::operation_aborted) co_return;
    }
  }
  self->m_exited_event.cancel();
  auto callbacks = std::move(self->m_on_exit);
  self->m_on_exit.clear();
  for (auto& fn : callbacks) fn();
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
    asio::post(m_exited_event.get_executor(), std::move(fn));
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

void Child::signal_group(int sig) {
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
