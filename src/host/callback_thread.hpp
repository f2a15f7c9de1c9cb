// host/callback_thread.hpp — the thread on which a Host runs the embedder's callbacks.
//
// One thread, so callbacks run one at a time in the order they were posted. A callback
// may block (it holds back only the callbacks after it), call the Host's blocking
// methods, or throw: the exception is logged, naming the callback, and the next one runs.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace exthost::host {

class CallbackThread {
 public:
  CallbackThread();
  ~CallbackThread();
  CallbackThread(const CallbackThread&) = delete;
  CallbackThread& operator=(const CallbackThread&) = delete;

  // Runs `job` on the thread after every job posted before it; `what` names it in the log
  // if it throws ("<what> threw: …").
  template <class F>
  void post(std::string what, F job) {
    boost::asio::post(m_io, [what = std::move(what), job = std::move(job)]() mutable {
      try {
        job();
      } catch (...) {
        log_thrown(what, std::current_exception());
      }
    });
  }

  bool running_in_this_thread() const { return m_thread.get_id() == std::this_thread::get_id(); }

  // Runs what is already posted, then ends the thread (later posts never run). Idempotent;
  // never from the thread itself.
  void join();

 private:
  static void log_thrown(const std::string& what, std::exception_ptr e);

  boost::asio::io_context m_io{1};
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> m_work;
  std::thread m_thread;
};

}  // namespace exthost::host
