// process/janitor.hpp — one background thread for the process chores that may block:
// collecting a child whose Child was destroyed before it ended, killing and removing control
// groups, sweeping groups left by hosts that no longer run, reading cgroup counters.
//
// An I/O thread never waits on these: it posts them here. A chore that must be retried (a
// group whose killed processes are still exiting, a child not yet collectable) waits on a
// timer, never in a sleep, so one slow chore holds up no other. As the process exits, the
// janitor keeps working for at most k_exit_bound on what is still retrying, then stops.
//
// Threading: post from any thread; chores run on the janitor's thread, in the order posted.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <sys/types.h>

namespace exthost::process::janitor {

// How long the janitor goes on, as the process exits, with chores still retrying.
inline constexpr std::chrono::milliseconds k_exit_bound{100};
// A child not yet collectable is tried again after 1 ms, then twice as long each time, up to
// this; until it is collected (it was sent SIGKILL, so only an unkillable state delays it).
inline constexpr std::chrono::milliseconds k_reap_retry_max{100};

// The janitor's executor, for chores written as coroutines and their retry timers.
boost::asio::any_io_executor executor();

// Runs `chore` on the janitor's thread. An exception it throws is logged.
void post(std::function<void()> chore);
// Runs the coroutine `chore` on the janitor, where its timers wait too. An exception it
// throws is logged.
void spawn(boost::asio::awaitable<void> chore);

// Collects the exit status of `pid`, a child of this process that nobody else will wait for,
// as soon as it can be collected: no zombie is left behind.
void reap(pid_t pid);

}  // namespace exthost::process::janitor
