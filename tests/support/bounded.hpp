// bounded.hpp — run an awaitable on a test's own io_context, failing instead of hanging.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <future>
#include <optional>

namespace exthost::testing {

// Runs the context until `future` is ready or `bound` passes; false (and a test failure)
// when it did not become ready.
template <class F>
bool wait_ready(boost::asio::io_context& io, F& future, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "operation did not complete within " << bound.count() << " ms";
      return false;
    }
    io.restart();
    io.run_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Runs `coro` to completion within `bound`; nullopt (and a test failure) if it did not end.
template <class T>
std::optional<T> run_bounded(boost::asio::io_context& io, boost::asio::awaitable<T> coro,
                             std::chrono::milliseconds bound = std::chrono::seconds(20)) {
  auto future = boost::asio::co_spawn(io, std::move(coro), boost::asio::use_future);
  if (!wait_ready(io, future, bound)) return std::nullopt;
  return future.get();
}

// run_bounded for an awaitable<void>: true when it completed within `bound`.
inline bool run_bounded(boost::asio::io_context& io, boost::asio::awaitable<void> coro,
                        std::chrono::milliseconds bound = std::chrono::seconds(20)) {
  auto future = boost::asio::co_spawn(io, std::move(coro), boost::asio::use_future);
  if (!wait_ready(io, future, bound)) return false;
  future.get();
  return true;
}

// Keeps running the context until `pred` holds or `bound` passes. Returns pred().
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred pred, std::chrono::milliseconds bound = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace exthost::testing
