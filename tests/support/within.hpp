// within.hpp — run a blocking piece of a test on a thread of its own, failing instead of
// hanging when it does not finish in time.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <utility>

namespace exthost::testing {

// Runs `f` on a new thread; true when it finished within `bound`. On a timeout the thread
// is left behind, detached: whatever `f` refers to must then stay alive (leak it).
template <class F>
bool finishes_within(std::chrono::milliseconds bound, F f) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([f = std::move(f), done]() mutable {
    f();
    done->set_value();
  }).detach();
  return finished.wait_for(bound) == std::future_status::ready;
}

// Polls `pred` every 5 ms until it holds or `bound` passes. Returns pred().
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds bound = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return pred();
}

}  // namespace exthost::testing
