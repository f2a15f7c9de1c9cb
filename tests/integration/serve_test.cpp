// `exthost serve` driven end to end by a test client over its stdin and stdout.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <set>

#include "../support/plugin_dir.hpp"
#include "wire/frame_parser.hpp"
#include "wire/frame_writer.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

// A client of one `exthost serve` process. Every read is bounded: a silent server fails
// the test instead of hanging it.
class ServeClient {
 public:
  explicit ServeClient(const fs::path& home, const char* timeout_seconds = nullptr) {
    int in[2], out[2];
    EXPECT_EQ(::pipe(in), 0);
    EXPECT_EQ(::pipe(out), 0);
    m_pid = ::fork();
    if (m_pid == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
      if (timeout_seconds != nullptr) {
        ::execl(EXTHOST_CLI, "exthost", "serve", "--home", home.c_str(), "--timeout", timeout_seconds,
                static_cast<char*>(nullptr));
      }
      ::execl(EXTHOST_CLI, "exthost", "serve", "--home", home.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    m_to = in[1];
    m_from = out[0];
  }
  ~ServeClient() {
    if (m_to >= 0) ::close(m_to);
    if (m_pid > 0 && !m_reaped) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
    ::close(m_from);
  }

  // Sends a request without waiting; returns its id.
  int send_request(const std::string& method, json::value params) {
    const int id = ++m_next_id;
    send_raw(exthost::wire::FrameWriter::frame(json::serialize(
        json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}})));
    return id;
  }

  // Sends a request and waits for its reply; notifications that arrive first are kept.
  json::object call(const std::string& method, json::value params) {
    const int id = ++m_next_id;
    const std::string body =
        json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    send_raw(exthost::wire::FrameWriter::frame(body));
    for (;;) {
      auto msg = next();
      if (!msg) return json::object{{"error", "no reply"}};
      if (msg->contains("id") && msg->at("id") == id) return *msg;
      notifications.push_back(*msg);
    }
  }
  void send_raw(const std::string& bytes) { ASSERT_EQ(::write(m_to, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size())); }
  void close_input() {
    ::close(m_to);
    m_to = -1;
  }
  std::optional<json::object> next() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      auto step = m_parser.feed(m_pending);
      std::optional<json::value> body;
      if (step.body) body = json::parse(*step.body);  // the view may point into m_pending
      m_pending.erase(0, step.consumed);
      if (body) return body->as_object();
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
  int wait_exit() {
    int status = 0;
    for (int i = 0; i < 2000 && ::waitpid(m_pid, &status, WNOHANG) == 0; ++i) ::usleep(10'000);
    m_reaped = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::vector<json::object> notifications;

 private:
  pid_t m_pid = -1;
  int m_to = -1, m_from = -1;
  int m_next_id = 0;
  bool m_reaped = false;
  exthost::wire::FrameParser m_parser{"serve"};
  std::string m_pending;
};

class ServeTest : public ::testing::Test {
 protected:
  TempRoot root{"serve"};
};

TEST_F(ServeTest, ATestClientLoadsTwoExtensionsCallsHooksCommandsHealthStatsUnloadsAndShutsDown) {
  const auto tools = write_fake_plugin(root.path(), "tools", {"commands"});
  const auto guard = write_fake_plugin(root.path(), "guard", {"hook", R"({"action":"block","reason":"rm -rf is not allowed"})"},
                                       R"({"permissions":["tools.intercept"],
                                           "hooks":[{"hook":"before_tool_call","match":{"input_contains":"rm -rf"}}]})");
  ServeClient client(root.path() / "home");

  auto loaded = client.call("host.load", json::object{{"path", tools.string()}});
  ASSERT_TRUE(loaded.contains("result")) << json::serialize(loaded);
  const auto& info = loaded.at("result").as_object();
  EXPECT_EQ(info.at("id"), "tools");
  EXPECT_EQ(info.at("health"), "running");
  EXPECT_EQ(info.at("generation"), 2);
  EXPECT_EQ(info.at("tools").as_array().at(0).at("runtime_name"), "tools:echo");
  auto hooked = client.call("host.load", json::object{{"path", guard.string()}});
  ASSERT_TRUE(hooked.contains("result")) << json::serialize(hooked);
  EXPECT_EQ(json::serialize(hooked.at("result").at("hooks")), R"([{"kind":"before_tool_call","tool":null}])");

  auto called = client.call("tool.call", json::object{{"tool", "tools:echo"}, {"input", {{"text", "hi"}}}});
  EXPECT_EQ(json::serialize(called.at("result")), R"({"result":{"content":{"text":"hi"}}})");

  auto blocked = client.call("tool.call", json::object{{"tool", "tools:echo"}, {"input", {{"command", "rm -rf /"}}}});
  ASSERT_TRUE(blocked.contains("error")) << json::serialize(blocked);
  EXPECT_EQ(blocked.at("error").at("code"), -32002);
  EXPECT_EQ(blocked.at("error").at("message"), "tool.call: Tool 'tools:echo' blocked by hook: rm -rf is not allowed");
  EXPECT_EQ(json::serialize(blocked.at("error").at("data")),
            R"({"kind":"extension","method":"tool.call","extension":"tools"})");

  auto emitted = client.call("hook.emit", json::object{{"kind", "before_tool_call"},
                                                       {"tool_name", "bash"},
                                                       {"tool_input", {{"command", "rm -rf /tmp/x"}}}});
  EXPECT_EQ(json::serialize(emitted.at("result")), R"({"result":{"action":"block","reason":"rm -rf is not allowed"}})");

  auto invoked = client.call("command.invoke", json::object{{"id", "tools"}, {"command", "small"}, {"args", json::array{}}});
  ASSERT_TRUE(invoked.contains("result")) << json::serialize(invoked);
  EXPECT_EQ(json::serialize(invoked.at("result").at("result")), R"({"status":"ok"})");
  EXPECT_EQ(invoked.at("result").at("events").as_array().size(), 9u);
  EXPECT_EQ(invoked.at("result").at("counters").at("saw_done"), true);
  EXPECT_TRUE(invoked.at("result").at("notice").is_null());

  auto health = client.call("host.health", json::object{{"id", "tools"}});
  EXPECT_EQ(json::serialize(health.at("result")),
            R"({"health":"running","restart_count":0,"lifecycle":{"generation":2,"health":"running"}})");
  auto stats = client.call("host.stats", json::object{{"id", "tools"}});
  ASSERT_TRUE(stats.contains("result")) << json::serialize(stats);
  EXPECT_GE(stats.at("result").at("calls").at("ok").as_int64(), 3);
  EXPECT_GT(stats.at("result").at("frames_in").as_int64(), 3);

  auto tools_listed = client.call("host.tools", json::object{});
  EXPECT_EQ(tools_listed.at("result").at("tools").as_array().at(0).at("api_name"), "tools_echo");
  auto listed = client.call("host.list", json::object{});
  EXPECT_EQ(listed.at("result").at("extensions").as_array().size(), 2u);
  auto unknown = client.call("no.such", json::object{});
  EXPECT_EQ(json::serialize(unknown.at("error")), R"({"code":-32601,"message":"method not found: no.such"})");
  auto missing = client.call("host.stats", json::object{{"id", "nobody"}});
  EXPECT_EQ(missing.at("error").at("message"), "host.stats: Extension 'nobody' not found");

  auto unloaded = client.call("host.unload", json::object{{"id", "guard"}});
  EXPECT_EQ(json::serialize(unloaded.at("result")), R"({"ok":true})");
  auto allowed = client.call("tool.call", json::object{{"tool", "tools:echo"}, {"input", {{"command", "rm -rf /"}}}});
  EXPECT_TRUE(allowed.contains("result")) << json::serialize(allowed);

  auto down = client.call("host.shutdown", json::object{});
  EXPECT_EQ(json::serialize(down.at("result")), R"({"ok":true})");
  EXPECT_EQ(client.wait_exit(), 0);
}

TEST_F(ServeTest, ProviderStreamEventsArriveAsNotificationsBeforeTheResult) {
  const auto provider = write_fake_plugin(root.path(), "prov", {"provider", "3"},
                                          R"({"permissions":["tools.register","providers.register"]})");
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", provider.string()}}).contains("result"));
  auto streamed = client.call("provider.stream",
                              json::object{{"id", "prov"}, {"params", {{"model", "m1"}, {"messages", json::array{}}}}});
  ASSERT_TRUE(streamed.contains("result")) << json::serialize(streamed);
  std::size_t texts = 0;
  for (const auto& n : client.notifications) {
    EXPECT_EQ(n.at("method"), "provider.stream.event");
    EXPECT_EQ(n.at("params").at("request_id"), 2);
    if (n.at("params").at("event").at("type") == "text") ++texts;
  }
  EXPECT_EQ(texts, 3u);
  client.close_input();  // the end of the input stops the server too
  EXPECT_EQ(client.wait_exit(), 0);
}

// 64 requests at once (k_max_serve_in_flight): a 65th is not even read until one of them
// ends. Here 65 calls wait on an extension that never answers (each until its 1 s
// deadline), then host.list follows: it must be answered after a call's timeout, not at once.
TEST_F(ServeTest, AtMostSixtyFourRequestsRunAtOnceAndTheInputWaitsBeyondThat) {
  const auto stuck = write_fake_plugin(root.path(), "stuck", {"hostile", "no-read"});
  ServeClient client(root.path() / "home", "1");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", stuck.string()}}).contains("result"));
  std::set<int> calls;
  for (int i = 0; i < 65; ++i) calls.insert(client.send_request("tool.call", json::object{{"tool", "stuck:attack"}}));
  const int list_id = client.send_request("host.list", json::object{});
  std::vector<int> order;
  while (order.size() < calls.size() + 1) {
    auto msg = client.next();
    ASSERT_TRUE(msg);
    order.push_back(static_cast<int>(msg->at("id").as_int64()));
    if (order.back() != list_id) {
      EXPECT_EQ(msg->at("error").at("code"), -32003) << json::serialize(*msg);
    }
  }
  EXPECT_TRUE(calls.count(order.front())) << "the first answer is a timed-out call, not the host.list behind them";
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

TEST_F(ServeTest, MalformedRequestsGetJsonRpcErrorsAndTheServerCarriesOn) {
  ServeClient client(root.path() / "home");
  client.send_raw(exthost::wire::FrameWriter::frame("{not json"));
  auto parse_error = client.next();
  ASSERT_TRUE(parse_error);
  EXPECT_EQ(parse_error->at("error").at("code"), -32700);
  EXPECT_TRUE(parse_error->at("id").is_null());
  client.send_raw(exthost::wire::FrameWriter::frame(R"({"jsonrpc":"2.0","id":5})"));
  auto invalid = client.next();
  ASSERT_TRUE(invalid);
  EXPECT_EQ(invalid->at("error").at("code"), -32600);
  EXPECT_EQ(invalid->at("id"), 5);
  auto load = client.call("host.load", json::object{{"nopath", 1}});
  EXPECT_EQ(load.at("error").at("message"), "host.load: missing or invalid 'path' parameter");
  EXPECT_EQ(load.at("error").at("code"), -32602);
  auto bad = client.call("host.load", json::object{{"path", (root.path() / "absent").string()}});
  EXPECT_EQ(bad.at("error").at("code"), -32001);
  EXPECT_EQ(json::serialize(client.call("session.start", json::object{{"session_id", "s1"}}).at("result")),
            R"({"injection":null})");
  EXPECT_EQ(json::serialize(client.call("session.end", json::object{{"session_id", "s1"}, {"transcript", json::array{}}})
                                .at("result")),
            R"({"completed":true})");
  EXPECT_EQ(client.call("session.end", json::object{}).at("error").at("message"),
            "session.end: missing or invalid 'session_id' parameter");
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

}  // namespace
