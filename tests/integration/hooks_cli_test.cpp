// --hooks-fail-closed on the command line: `exthost call`, `exthost hook` and `exthost serve`
// make every hook subscription fail closed; without it a failed hook fails open.
#include <gtest/gtest.h>

#include <array>
#include <boost/json.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/plugin_dir.hpp"
#include "wire/frame_parser.hpp"
#include "wire/frame_writer.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The command with `args`, its stdout and stderr.
Run run(const std::string& args, const fs::path& err_file) {
  const std::string cmd = std::string(EXTHOST_CLI) + " " + args + " 2>" + err_file.string();
  Run r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = exthost::testing::read_text(err_file);
  return r;
}

// `exthost serve` with `args` in a child on pipes; one request at a time, every read bounded.
class Server {
 public:
  explicit Server(const std::vector<std::string>& args) {
    int in[2], out[2];
    EXPECT_EQ(::pipe(in), 0);
    EXPECT_EQ(::pipe(out), 0);
    m_pid = ::fork();
    if (m_pid == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
      std::vector<char*> argv{const_cast<char*>("exthost"), const_cast<char*>("serve")};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(EXTHOST_CLI, argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    m_to = in[1];
    m_from = out[0];
  }
  ~Server() {
    if (m_to >= 0) ::close(m_to);  // the end of the input stops the server
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::waitpid(m_pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "the server did not end within 20 s";
        ::kill(m_pid, SIGKILL);
        ::waitpid(m_pid, &status, 0);
        break;
      }
      ::usleep(10'000);
    }
    ::close(m_from);
  }
  // Sends one request and returns its reply ({"error": "no reply"} if none came in 20 s).
  json::object call(const std::string& method, json::value params) {
    const int id = ++m_next_id;
    const std::string frame = exthost::wire::FrameWriter::frame(
        json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}));
    EXPECT_EQ(::write(m_to, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      auto step = m_parser.feed(m_pending);
      std::optional<std::string> body;
      if (step.body) body = std::string(*step.body);
      m_pending.erase(0, step.consumed);
      if (body) {
        auto msg = json::parse(*body).as_object();
        if (msg.contains("id") && msg.at("id") == id) return msg;
        continue;  // a notification
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{m_from, POLLIN, 0};
      if (step.error || left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[65536];
      const ssize_t n = ::read(m_from, buf, sizeof buf);
      if (n <= 0) break;
      m_pending.append(buf, static_cast<std::size_t>(n));
    }
    return json::object{{"error", "no reply"}};
  }

 private:
  pid_t m_pid = -1;
  int m_to = -1, m_from = -1;
  int m_next_id = 0;
  exthost::wire::FrameParser m_parser{"serve"};
  std::string m_pending;
};

// A plugin whose extension serves tools and guards every tool call with a hook that
// answers an error.
class HooksCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::signal(SIGPIPE, SIG_IGN);
    plugin = write_fake_plugin(root.path(), "guard", {"hook-error", "policy down"},
                               R"({"permissions":["tools.register","tools.intercept"],
                                   "hooks":[{"hook":"before_tool_call"}]})");
  }
  std::string common() const { return plugin.string() + " --home " + (root.path() / "home").string(); }
  fs::path err() const { return root.path() / "stderr"; }

  TempRoot root{"hooks-cli"};
  fs::path plugin;
};

constexpr const char* k_reason = "blocked: hook of extension 'guard' answered an error: policy down (fail-closed)";

TEST_F(HooksCliTest, CallFailsOpenByDefaultAndClosedWithTheFlag) {
  auto open = run("call " + common() + R"( echo '{"text":"hi"}')", err());
  EXPECT_EQ(open.exit_code, 0) << open.err;
  EXPECT_EQ(open.out, "{\"content\":{\"text\":\"hi\"}}\n");

  auto closed = run("call " + common() + R"( echo '{"text":"hi"}' --hooks-fail-closed)", err());
  EXPECT_EQ(closed.exit_code, 4) << "an extension failure" << closed.err;
  EXPECT_EQ(closed.out, "");
  EXPECT_NE(closed.err.find(std::string("Tool 'guard:echo' blocked by hook: ") + k_reason), std::string::npos)
      << closed.err;
}

TEST_F(HooksCliTest, HookPrintsTheFailClosedBlockWithTheFlag) {
  auto open = run("hook " + common() + R"( before_tool_call '{"tool_name":"bash"}' --json)", err());
  EXPECT_EQ(open.exit_code, 0) << open.err;
  EXPECT_EQ(open.out, "{\"result\":{\"action\":\"continue\"}}\n");

  auto closed = run("hook " + common() + R"( before_tool_call '{"tool_name":"bash"}' --json --hooks-fail-closed)", err());
  EXPECT_EQ(closed.exit_code, 0) << closed.err;
  EXPECT_EQ(closed.out, std::string("{\"result\":{\"action\":\"block\",\"reason\":\"") + k_reason + "\"}}\n");
}

TEST_F(HooksCliTest, ServeFailsEveryHookClosedWithTheFlag) {
  for (const bool flag : {false, true}) {
    std::vector<std::string> args{"--home", (root.path() / "home").string()};
    if (flag) args.emplace_back("--hooks-fail-closed");
    Server server(args);
    auto loaded = server.call("host.load", json::object{{"path", plugin.string()}});
    ASSERT_TRUE(loaded.contains("result")) << json::serialize(loaded);
    auto called = server.call("tool.call", json::object{{"tool", "guard:echo"}, {"input", {{"text", "hi"}}}});
    if (!flag) {
      EXPECT_EQ(json::serialize(called.at("result")), R"({"result":{"content":{"text":"hi"}}})");
      continue;
    }
    ASSERT_TRUE(called.contains("error")) << json::serialize(called);
    EXPECT_EQ(json::value_to<std::string>(called.at("error").at("message")),
              std::string("tool.call: Tool 'guard:echo' blocked by hook: ") + k_reason);
  }
}

}  // namespace
