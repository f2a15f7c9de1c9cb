// rpc/event.hpp — a level-triggered wake-up for coroutines on one I/O thread.
//
// wait() suspends until notify() is called or the awaiting operation is cancelled (it is an
// Asio timer underneath, so `co_await (event.wait() || deadline)` cancels cleanly). A waiter
// must re-check its condition after waking: notify() wakes everyone waiting at that moment
// and nobody later. Not thread-safe: I/O thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace exthost::rpc {

class Event {
 public:
  explicit Event(const boost::asio::any_io_executor& ex) : m_timer(ex, boost::asio::steady_timer::time_point::max()) {}

  // Completes on notify() or on cancellation; never throws on its own.
  boost::asio::awaitable<void> wait() {
    co_await m_timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  void notify() { m_timer.cancel(); }

 private:
  boost::asio::steady_timer m_timer;
};

}  // namespace exthost::rpc
