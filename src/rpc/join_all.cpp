#include "rpc/join_all.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "rpc/event.hpp"
#include "util/exception_text.hpp"
#include "util/log.hpp"

namespace exthost::rpc {
namespace asio = boost::asio;

asio::awaitable<bool> join_all(asio::any_io_executor ex, std::vector<asio::awaitable<void>> ops,
                               std::chrono::milliseconds bound) {
  struct Gather {
    explicit Gather(const asio::any_io_executor& e, std::size_t n) : remaining(n), done(e) {}
    std::size_t remaining;
    bool expired = false;
    rpc::Event done;
  };
  auto gather = std::make_shared<Gather>(ex, ops.size());
  for (auto& op : ops) {
    asio::co_spawn(ex, std::move(op), [gather](std::exception_ptr e) {
      if (e) util::log().error("a task joined by join_all failed inside the host: {}", util::exception_text(e));
      if (--gather->remaining == 0) gather->done.notify();
    });
  }
  auto deadline = std::make_shared<asio::steady_timer>(ex, bound);
  deadline->async_wait([gather, deadline](boost::system::error_code ec) {
    if (!ec) {
      gather->expired = true;
      gather->done.notify();
    }
  });
  while (gather->remaining > 0 && !gather->expired) co_await gather->done.wait();
  deadline->cancel();
  co_return gather->remaining == 0;
}

}  // namespace exthost::rpc
