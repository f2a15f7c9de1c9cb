#include "host/stop_watch.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

namespace exthost::host {

struct StopWatch::State {
  explicit State(const boost::asio::any_io_executor& io) : executor(io), woken(io) {}
  boost::asio::any_io_executor executor;
  rpc::Event woken;
  bool stopped = false;  // I/O thread only
};

StopWatch::StopWatch(const boost::asio::any_io_executor& io, const std::stop_token& stop)
    : m_state(std::make_shared<State>(io)) {
  // The callback runs on whichever thread requests the stop (here, if it already was); it
  // holds the state, not this object, so a wake-up posted late finds it alive.
  std::function<void()> wake = [state = m_state] {
    boost::asio::post(state->executor, [state] {
      state->stopped = true;
      state->woken.notify();
    });
  };
  m_callback.emplace(stop, std::move(wake));
}

StopWatch::~StopWatch() = default;

bool StopWatch::stop_requested() const { return m_state->stopped; }

boost::asio::awaitable<void> StopWatch::stopped() {
  auto state = m_state;
  while (!state->stopped) {
    co_await state->woken.wait();
    // Woken by our own cancellation (the operation we race ended first): stop waiting.
    auto cs = co_await boost::asio::this_coro::cancellation_state;
    if (cs.cancelled() != boost::asio::cancellation_type::none) co_return;
  }
}

Error cancelled_error(const std::string& what) { return Error::cancelled(what + " was cancelled"); }

}  // namespace exthost::host
