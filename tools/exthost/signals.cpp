// signals.cpp — the signal watcher of the exthost command.
#include "signals.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace exthost::cli {
namespace {

// Wakes the watcher thread when the command ends. Blocked in that thread only (and the
// stopper it starts), so the process's own handling of it is unchanged.
constexpr int k_wake_signal = SIGUSR1;

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

std::string signal_name(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(signo);
  }
}

void SignalWatcher::block_stop_signals() {
  const sigset_t set = stop_signals();
  if (const int rc = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    throw std::system_error(rc, std::generic_category(), "pthread_sigmask");
  }
}

SignalWatcher::SignalWatcher(OpenLine& line) : m_line(line) {
  // The new thread inherits the wake signal blocked; this thread's mask is restored after.
  sigset_t wake, previous;
  sigemptyset(&wake);
  sigaddset(&wake, k_wake_signal);
  ::pthread_sigmask(SIG_BLOCK, &wake, &previous);
  m_thread = std::thread([this] { run(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

SignalWatcher::~SignalWatcher() {
  unwatch();
  {
    std::lock_guard lock(m_mutex);
    m_closing = true;
  }
  ::pthread_kill(m_thread.native_handle(), k_wake_signal);
  m_thread.join();
}

void SignalWatcher::run() {
  sigset_t set = stop_signals();
  sigaddset(&set, k_wake_signal);
  for (;;) {
    siginfo_t info{};
    const int signo = ::sigwaitinfo(&set, &info);
    if (signo < 0) continue;  // EINTR
    if (signo == k_wake_signal) {
      std::lock_guard lock(m_mutex);
      if (m_closing) return;
      continue;
    }
    on_signal(signo);
  }
}

void SignalWatcher::on_signal(int signo) {
  std::lock_guard lock(m_mutex);
  if (m_received == 0) {
    m_received = signo;
    m_line.seal();  // before anything the stop may print
  }
  if (m_host == nullptr && m_stop_fd < 0) {
    m_unacted = true;
    return;
  }
  act_locked();
}

void SignalWatcher::act_locked() {
  if (m_host != nullptr) {
    if (!m_stop_started) {
      m_stop_started = true;
      if (m_in_operation) m_operation.request_stop();  // the call in flight is cancelled first
      m_stopper = std::thread([this, host = m_host] { stop_host(host); });
    } else if (!m_stop_done) {
      m_killed = true;
      m_host->kill_all();
    }
  } else if (m_stop_fd >= 0) {
    const char byte = 's';
    while (::write(m_stop_fd, &byte, 1) < 0 && errno == EINTR) {
    }
  }
}

// The stopper thread: lets a cancelled operation return (bounded), then stops every
// extension through the ladder.
void SignalWatcher::stop_host(Host* host) {
  {
    std::unique_lock lock(m_mutex);
    m_operation_ended.wait_for(lock, k_operation_cancel_bound, [this] { return !m_in_operation; });
  }
  host->shutdown_all();
  std::lock_guard lock(m_mutex);
  m_stop_done = true;
}

std::stop_token SignalWatcher::begin_operation() {
  std::lock_guard lock(m_mutex);
  m_operation = std::stop_source();
  m_in_operation = true;
  if (m_received != 0) m_operation.request_stop();  // interrupted already: nothing to run
  return m_operation.get_token();
}

void SignalWatcher::end_operation() {
  std::lock_guard lock(m_mutex);
  m_in_operation = false;
  m_operation_ended.notify_all();
}

void SignalWatcher::watch(Host& host) {
  std::lock_guard lock(m_mutex);
  m_host = &host;
  if (m_unacted) act_locked();
  m_unacted = false;
}

void SignalWatcher::watch_pipe(int stop_fd) {
  std::lock_guard lock(m_mutex);
  m_stop_fd = stop_fd;
  if (m_unacted) act_locked();
  m_unacted = false;
}

void SignalWatcher::unwatch() {
  for (;;) {
    std::unique_lock lock(m_mutex);
    if (!m_stopper.joinable()) {
      m_host = nullptr;
      m_stop_fd = -1;
      m_stop_started = false;
      m_stop_done = false;
      return;
    }
    std::thread stopper = std::move(m_stopper);
    lock.unlock();
    stopper.join();  // a later signal may still kill_all() meanwhile
  }
}

int SignalWatcher::received() const {
  std::lock_guard lock(m_mutex);
  return m_received;
}

bool SignalWatcher::killed() const {
  std::lock_guard lock(m_mutex);
  return m_killed;
}

StopPipe::StopPipe() {
  if (::pipe2(m_fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  ::fcntl(m_fds[1], F_SETFL, ::fcntl(m_fds[1], F_GETFL) | O_NONBLOCK);
}

StopPipe::~StopPipe() {
  ::close(m_fds[0]);
  ::close(m_fds[1]);
}

}  // namespace exthost::cli
