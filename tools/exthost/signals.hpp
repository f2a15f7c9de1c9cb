// signals.hpp — what SIGINT, SIGTERM and SIGHUP do to the exthost command.
//
// main() blocks the three before any thread exists, so every thread inherits the mask and
// none is ever interrupted; one watcher thread takes them with sigwaitinfo(). The first
// ends a line being drawn on stdout and stops what the verb runs: a Host through the full
// stop ladder (shutdown_all(), which fails the calls in flight, so the verb's own blocking
// call returns), or a stop pipe (serve, conformance) by one byte. A later signal while
// stopping kills every extension at once (kill_all(), or one more byte). The verb then
// exits with 128 + the first signal.
#pragma once

#include <csignal>
#include <mutex>
#include <string>
#include <thread>

#include "exthost/host.hpp"
#include "open_line.hpp"

namespace exthost::cli {

// "SIGINT", "SIGTERM", "SIGHUP".
std::string signal_name(int signo);

class SignalWatcher {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread. Call first in main(), before
  // any thread exists, so that every later thread inherits the mask.
  static void block_stop_signals();

  // Starts the watcher thread; `line` is ended and sealed on the first signal.
  explicit SignalWatcher(OpenLine& line);
  // Wakes the watcher thread and joins it, after any stop under way.
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // What a signal stops from now on: `host` (the first signal runs shutdown_all() on a
  // thread of the watcher, a later one kill_all()), or the write end of a stop pipe (each
  // signal writes one byte). A signal that came while nothing was watched is acted on now.
  void watch(Host& host);
  void watch_pipe(int stop_fd);
  // Nothing to stop any more: waits for a shutdown_all() under way to end. Call before the
  // watched Host is destroyed.
  void unwatch();

  // The first signal received, 0 while none has been.
  int received() const;
  // Whether a later signal killed every extension instead of letting the ladder finish.
  bool killed() const;

 private:
  void run();
  void on_signal(int signo);
  void act_locked();

  OpenLine& m_line;
  mutable std::mutex m_mutex;
  Host* m_host = nullptr;
  int m_stop_fd = -1;
  bool m_unacted = false;  // a signal came while nothing was watched
  std::thread m_stopper;   // runs m_host->shutdown_all() after the first signal
  bool m_stop_started = false;
  bool m_stop_done = false;  // that shutdown_all() has returned
  int m_received = 0;
  bool m_killed = false;
  bool m_closing = false;
  std::thread m_thread;  // the one that waits for signals
};

// Watches a host or a stop pipe while in scope.
class Watch {
 public:
  Watch(SignalWatcher& watcher, Host& host) : m_watcher(watcher) { m_watcher.watch(host); }
  Watch(SignalWatcher& watcher, int stop_fd) : m_watcher(watcher) { m_watcher.watch_pipe(stop_fd); }
  ~Watch() { m_watcher.unwatch(); }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  SignalWatcher& m_watcher;
};

// A pipe whose read end a stop_fd option watches (ServeOptions, check_conformance) and
// whose write end the watcher writes to; the write end does not block. Closed on scope exit.
class StopPipe {
 public:
  StopPipe();
  ~StopPipe();
  StopPipe(const StopPipe&) = delete;
  StopPipe& operator=(const StopPipe&) = delete;
  int read_fd() const { return m_fds[0]; }
  int write_fd() const { return m_fds[1]; }

 private:
  int m_fds[2] = {-1, -1};
};

}  // namespace exthost::cli
