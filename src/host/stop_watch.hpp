// host/stop_watch.hpp — a caller's std::stop_token, seen from the host's I/O thread.
//
// The public API takes a std::stop_token for cancellation; the caller requests the stop on
// any thread. A StopWatch, made on the I/O thread, registers a stop callback that only
// posts a wake-up to that thread, and stopped() completes there once the stop was
// requested (at once if it already was). cancellable() races an operation against it: the
// loser is cancelled the Asio way (terminal), which is how an operation's own deadline
// already cancels it, so a cancelled request is abandoned exactly as a timed-out one is
// (its late reply dropped, "$/cancelRequest" sent to an extension that declared
// cancellation), but nothing counts it against the extension.
//
// Threading: construct, await and destroy on the I/O thread. The destructor may wait for a
// stop callback running on another thread at that moment; that callback only posts.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "exthost/result.hpp"
#include "rpc/event.hpp"

namespace exthost::host {

class StopWatch {
 public:
  StopWatch(const boost::asio::any_io_executor& io, const std::stop_token& stop);
  ~StopWatch();
  StopWatch(const StopWatch&) = delete;
  StopWatch& operator=(const StopWatch&) = delete;

  // Completes once the stop was requested, or when the awaiting operation is cancelled.
  boost::asio::awaitable<void> stopped();
  bool stop_requested() const;

 private:
  struct State;
  std::shared_ptr<State> m_state;
  std::optional<std::stop_callback<std::function<void()>>> m_callback;
};

// The text of a cancelled operation's error: "<what> was cancelled".
Error cancelled_error(const std::string& what);

// Runs `op` until it ends or `stop` is requested; then `op` is cancelled and the result is
// cancelled_error(what).
template <class T>
boost::asio::awaitable<Result<T>> race_stop(boost::asio::awaitable<Result<T>> op, std::stop_token stop,
                                            std::string what) {
  using namespace boost::asio::experimental::awaitable_operators;
  if (stop.stop_requested()) co_return cancelled_error(what);
  StopWatch watch(co_await boost::asio::this_coro::executor, stop);
  auto raced = co_await (std::move(op) || watch.stopped());
  if (raced.index() == 1) co_return cancelled_error(what);
  co_return std::get<0>(std::move(raced));
}

// `op`, cancellable through `stop`; without a stop possible, `op` itself (no extra frame on
// the common path).
template <class T>
boost::asio::awaitable<Result<T>> cancellable(boost::asio::awaitable<Result<T>> op, std::stop_token stop,
                                              std::string what) {
  if (!stop.stop_possible()) return op;
  return race_stop(std::move(op), std::move(stop), std::move(what));
}

}  // namespace exthost::host
