#include "process/janitor.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <exception>
#include <future>
#include <sys/wait.h>
#include <thread>

#include "util/log.hpp"

namespace exthost::process::janitor {
namespace asio = boost::asio;

namespace {

constexpr std::chrono::milliseconds k_reap_retry_first{1};

void log_failure(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    util::log().error("process janitor: a chore failed: {}", x.what());
  } catch (...) {
    util::log().error("process janitor: a chore failed");
  }
}

class Janitor {
 public:
  Janitor() {
    (void)util::log();  // created first, so the logger outlives this thread
    m_thread = std::thread([this] {
      m_io.run();
      m_ended.set_value();
    });
  }
  ~Janitor() {
    m_work.reset();
    if (m_ended_future.wait_for(k_exit_bound) != std::future_status::ready) m_io.stop();
    m_thread.join();
  }
  Janitor(const Janitor&) = delete;
  Janitor& operator=(const Janitor&) = delete;

  asio::io_context& io() { return m_io; }

 private:
  asio::io_context m_io{1};
  asio::executor_work_guard<asio::io_context::executor_type> m_work{m_io.get_executor()};
  std::promise<void> m_ended;
  std::future<void> m_ended_future = m_ended.get_future();
  std::thread m_thread;
};

Janitor& instance() {
  static Janitor janitor;
  return janitor;
}

asio::awaitable<void> reap_when_possible(pid_t pid) {
  asio::steady_timer retry(co_await asio::this_coro::executor);
  for (auto delay = k_reap_retry_first;; delay = std::min(delay * 2, k_reap_retry_max)) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) co_return;  // collected, or not ours to collect
    retry.expires_after(delay);
    auto [ec] = co_await retry.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
  }
}

}  // namespace

asio::any_io_executor executor() { return instance().io().get_executor(); }

void post(std::function<void()> chore) {
  asio::post(instance().io(), [chore = std::move(chore)] {
    try {
      chore();
    } catch (...) {
      log_failure(std::current_exception());
    }
  });
}

void spawn(asio::awaitable<void> chore) {
  asio::co_spawn(instance().io(), std::move(chore), [](std::exception_ptr e) { log_failure(e); });
}

void reap(pid_t pid) { spawn(reap_when_possible(pid)); }

}  // namespace exthost::process::janitor
