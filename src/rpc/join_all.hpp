// rpc/join_all.hpp — run coroutines side by side and wait for all of them, within a bound.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <vector>

namespace exthost::rpc {

// Runs every awaitable at once and waits for all of them, or for `bound`; returns whether
// all finished in time. Each runs detached, so one left behind finishes on its own; what
// one throws is logged, never rethrown. Every completion writes only into state shared with
// the handlers, never into this coroutine's frame, which may be gone by the time a
// completion queued in the same reactor pass runs.
boost::asio::awaitable<bool> join_all(boost::asio::any_io_executor ex, std::vector<boost::asio::awaitable<void>> ops,
                                      std::chrono::milliseconds bound);

}  // namespace exthost::rpc
