// signals.hpp — what SIGINT, SIGTERM and SIGHUP do to the exthost command.
//
// main() blocks the three before any thread exists, so every thread inherits the mask and
// none is ever interrupted; one watcher thread takes them with sigwaitinfo(). The first
// ends a line being drawn on stdout and stops what the verb runs: first the operation under
// way (an Operation's stop token, which the verb gave its Host call: the extension receives
// "$/cancelRequest" and a command returns what it had collected), then, once that call
// has returned (or after k_operation_cancel_bound), a Host through the full stop ladder
// (shutdown_all(), which fails whatever is still in flight), or a stop pipe (serve,
// conformance) by one byte. A later signal while stopping kills every extension at once
// (kill_all(), or one more byte). The verb then exits with 128 + the first signal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "exthost/host.hpp"
#include "open_line.hpp"

namespace exthost::cli {

// "SIGINT", "SIGTERM", "SIGHUP".
std::string signal_name(int signo);

// How long the first signal lets a cancelled operation return before the ladder stops every
// extension anyway. A cancelled Host call returns at once; this bounds only a verb that is
// slow to get back (its output blocked, say).
inline constexpr std::chrono::milliseconds k_operation_cancel_bound{2'000};

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

  // An operation of the watched Host begins: the token to give its call, which the first
  // signal requests (at once if one came already). Ends with end_operation(); one at a time.
  std::stop_token begin_operation();
  void end_operation();

  // The first signal received, 0 while none has been.
  int received() const;
  // Whether a later signal killed every extension instead of letting the ladder finish.
  bool killed() const;

 private:
  void run();
  void on_signal(int signo);
  void act_locked();
  void stop_host(Host* host);

  OpenLine& m_line;
  mutable std::mutex m_mutex;
  std::condition_variable m_operation_ended;
  std::stop_source m_operation;    // the operation under way's, while m_in_operation
  bool m_in_operation = false;
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

// One operation of the watched Host while in scope: give token() to its call.
class Operation {
 public:
  explicit Operation(SignalWatcher& watcher) : m_watcher(watcher), m_token(watcher.begin_operation()) {}
  ~Operation() { m_watcher.end_operation(); }
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;
  std::stop_token token() const { return m_token; }

 private:
  SignalWatcher& m_watcher;
  std::stop_token m_token;
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
