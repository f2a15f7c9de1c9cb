// serve_client.hpp — a test client of `exthost serve` (or of exthost::serve() itself),
// running the server in a child process whose stdin and stdout are the client's pipes.
// Every read is bounded: a silent server fails the test instead of hanging it.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exthost/serve.hpp"
#include "wire/frame_parser.hpp"
#include "wire/frame_writer.hpp"

namespace exthost::testing {

// Runs the server in a child process whose stdin and stdout are the client's pipes, given the
// read end of the client's stop pipe (or -1); never returns.
using ServerMain = std::function<void(int stop_fd)>;

// `exthost serve` with `args` after "serve"; `before_exec` runs in the child first.
inline ServerMain cli_server(std::vector<std::string> args, std::function<void()> before_exec = {}) {
  return [args = std::move(args), before_exec = std::move(before_exec)](int) {
    if (before_exec) before_exec();
    std::vector<char*> argv{const_cast<char*>("exthost"), const_cast<char*>("serve")};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(EXTHOST_CLI, argv.data());
    ::_exit(127);
  };
}

// exthost::serve() itself with `options`, in a child of the test, watching the stop pipe.
inline ServerMain serve_in_child(exthost::HostOptions options) {
  return [options = std::move(options)](int stop_fd) {
    exthost::ServeOptions o;
    o.host = options;
    o.stop_fd = stop_fd;
    ::_exit(exthost::serve(o));
  };
}

// A client of one server process. Every read is bounded: a silent server fails the test
// instead of hanging it.
class ServeClient {
 public:
  explicit ServeClient(const std::filesystem::path& home, const char* timeout_seconds = nullptr)
      : ServeClient(timeout_seconds ? cli_server({"--home", home.string(), "--timeout", timeout_seconds})
                                    : cli_server({"--home", home.string()})) {}
  explicit ServeClient(const ServerMain& server) {
    int in[2], out[2], stop[2];
    EXPECT_EQ(::pipe(in), 0);
    EXPECT_EQ(::pipe(out), 0);
    EXPECT_EQ(::pipe(stop), 0);
    m_pid = ::fork();
    if (m_pid == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]), ::close(stop[1]);
      server(stop[0]);
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(stop[0]);
    m_to = in[1];
    m_from = out[0];
    m_stop = stop[1];
  }
  ~ServeClient() {
    if (m_to >= 0) ::close(m_to);
    if (m_pid > 0 && !m_reaped) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
    ::close(m_from);
    ::close(m_stop);
  }
  pid_t pid() const { return m_pid; }

  // Sends a request without waiting; returns its id.
  int send_request(const std::string& method, boost::json::value params) {
    const int id = ++m_next_id;
    send_raw(exthost::wire::FrameWriter::frame(boost::json::serialize(
        boost::json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}})));
    return id;
  }

  // Sends a request and waits for its reply; notifications that arrive first are kept.
  boost::json::object call(const std::string& method, boost::json::value params) {
    const int id = send_request(method, std::move(params));
    return reply_to(id);
  }
  // Waits for the reply to request `id`; other messages that arrive first are kept in
  // `notifications` (replies to other requests as well).
  boost::json::object reply_to(const boost::json::value& id) {
    for (;;) {
      auto msg = next();
      if (!msg) return boost::json::object{{"error", "no reply"}};
      if (msg->contains("id") && msg->at("id") == id) return *msg;
      notifications.push_back(*msg);
    }
  }
  // Sends a notification (no id, no reply).
  void send_notification(const std::string& method, boost::json::value params) {
    send_raw(exthost::wire::FrameWriter::frame(boost::json::serialize(
        boost::json::object{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}})));
  }
  void send_raw(const std::string& bytes) { ASSERT_EQ(::write(m_to, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size())); }
  void close_input() {
    ::close(m_to);
    m_to = -1;
  }
  // One byte on the server's stop pipe.
  void send_stop_byte() { ASSERT_EQ(::write(m_stop, "s", 1), 1); }
  std::optional<boost::json::object> next() {
    auto body = next_raw();
    if (!body) return std::nullopt;
    return boost::json::parse(*body).as_object();
  }
  // The next frame's body as it came.
  std::optional<std::string> next_raw() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      auto step = m_parser.feed(m_pending);
      std::optional<std::string> body;
      if (step.body) body = std::string(*step.body);  // the view may point into m_pending
      m_pending.erase(0, step.consumed);
      if (body) return body;
      if (step.error) {
        ADD_FAILURE() << *step.error;
        return std::nullopt;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{m_from, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        ADD_FAILURE() << "the server did not answer within 20 s";
        return std::nullopt;
      }
      char buf[65536];
      const ssize_t n = ::read(m_from, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      m_pending.append(buf, static_cast<std::size_t>(n));
    }
  }
  // The server's exit status once it ends within `bound`; -1 (and a failure) if it did not.
  int wait_exit(std::chrono::milliseconds bound = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    int status = 0;
    while (::waitpid(m_pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "the server did not end within " << bound.count() << " ms";
        return -1;
      }
      ::usleep(10'000);
    }
    m_reaped = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::vector<boost::json::object> notifications;

 private:
  pid_t m_pid = -1;
  int m_to = -1, m_from = -1, m_stop = -1;
  int m_next_id = 0;
  bool m_reaped = false;
  exthost::wire::FrameParser m_parser{"serve"};
  std::string m_pending;
};

}  // namespace exthost::testing
