// The header-only C++ SDK driven over real pipes by a scripted host.
#include "exthost_sdk.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>

namespace {

namespace json = boost::json;

// An Extension on a thread of its own, with pipes for its stdin and stdout.
class Harness {
 public:
  Harness() {
    int to[2], from[2];
    EXPECT_EQ(::pipe(to), 0);
    EXPECT_EQ(::pipe(from), 0);
    m_to = to[1];
    m_from = from[0];
    m_ext_in = to[0];
    m_ext_out = from[1];
    ext = std::make_unique<exthost_sdk::Extension>(m_ext_in, m_ext_out);
  }
  ~Harness() {
    close_input();
    if (m_thread.joinable()) m_thread.join();
    ::close(m_from);
    ::close(m_ext_in);
    ::close(m_ext_out);
  }
  void start() {
    m_thread = std::thread([this] { status = ext->run(); });
  }
  void close_input() {
    if (m_to >= 0) ::close(m_to);
    m_to = -1;
  }
  void send_raw(const std::string& bytes) { ASSERT_EQ(::write(m_to, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size())); }
  void send(const json::value& v) {
    const std::string body = json::serialize(v);
    send_raw("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  void request(json::value id, const char* method, json::value params) {
    send(json::object{{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", method}, {"params", std::move(params)}});
  }
  // The next frame from the extension, within 20 s.
  json::object read() {
    std::string header;
    while (header.size() < 4 || header.compare(header.size() - 4, 4, "\r\n\r\n") != 0) header += byte();
    const auto colon = header.find(':');
    std::string body(std::stoul(header.substr(colon + 1)), '\0');
    for (char& c : body) c = byte();
    return json::parse(body).as_object();
  }
  std::unique_ptr<exthost_sdk::Extension> ext;
  std::atomic<int> status{-1};

 private:
  char byte() {
    pollfd p{m_from, POLLIN, 0};
    if (::poll(&p, 1, 20'000) <= 0) throw std::runtime_error("the extension wrote nothing within 20 s");
    char c = 0;
    if (::read(m_from, &c, 1) != 1) throw std::runtime_error("the extension closed its output");
    return c;
  }
  int m_to = -1, m_from = -1, m_ext_in = -1, m_ext_out = -1;
  std::thread m_thread;
};

class CppSdk : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& ext = *h.ext;
    ext.tool("echo", "Echo text back", json::object{{"type", "object"}}, [](exthost_sdk::Call& call) -> json::value {
      return json::object{{"content", "echo: " + std::string(call.input().at("text").as_string())}};
    });
    ext.tool("remember", "Store a note", json::object{}, [&ext](exthost_sdk::Call& call) -> json::value {
      return ext.memory_append(std::string(call.input().at("note").as_string()), {"@note"});
    });
    ext.tool("wait_cancel", "Waits until cancelled", json::object{}, [](exthost_sdk::Call& call) -> json::value {
      for (int i = 0; i < 4000 && !call.cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return json::object{{"cancelled", call.cancelled()}};
    });
    ext.tool("boom", "Fails", json::object{}, [](exthost_sdk::Call&) -> json::value {
      throw exthost_sdk::ExtensionError("it broke");
    });
    ext.tool("infinite", "Answers a number JSON cannot carry", json::object{}, [](exthost_sdk::Call&) -> json::value {
      return json::object{{"value", std::numeric_limits<double>::infinity()}};
    });
    ext.hook("before_tool_call", [](exthost_sdk::Call& call) -> json::value {
      if (json::serialize(call.params().at("tool_input")).find("rm -rf") != std::string::npos) {
        return json::object{{"action", "block"}, {"reason", "no"}};
      }
      return nullptr;
    });
    ext.command("report", [&ext](exthost_sdk::Call& call, const std::vector<std::string>& args) -> json::value {
      ext.task_start("t1", "Counting", "work");
      ext.task_update("t1", 1, 2);
      call.table({"name", "n"}, {{"a", "1"}});
      ext.task_done("t1");
      call.done();
      return json::object{{"status", "ok"}, {"args", json::array(args.begin(), args.end())}};
    });
    h.start();
    h.request(1, "initialize", json::object{{"plugin_id", "notes"}, {"plugin_root", "/p"}, {"config", {{"k", "v"}}}});
    init = h.read();
  }
  Harness h;
  json::object init;
};

TEST_F(CppSdk, InitializeDeclaresToolsHooksAndCancellation) {
  EXPECT_EQ(init.at("id"), 1);
  const auto& caps = init.at("result").at("capabilities").as_object();
  EXPECT_EQ(init.at("result").at("protocol_version"), 1);
  EXPECT_EQ(caps.at("tools").as_array().size(), 5u);
  EXPECT_EQ(caps.at("cancellation"), true);
  EXPECT_EQ(caps.at("hooks"), true);
  EXPECT_EQ(h.ext->plugin_id(), "notes");
  EXPECT_EQ(json::serialize(h.ext->config()), R"({"k":"v"})");
}

TEST_F(CppSdk, ToolCallsEchoIdsVerbatimAndErrorsAreJsonRpcErrors) {
  h.request("evt-7", "tool.call", json::object{{"name", "echo"}, {"input", {{"text", "hi"}}}});
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","id":"evt-7","result":{"content":"echo: hi"}})");
  h.request(8, "tool.call", json::object{{"name", "nope"}});
  EXPECT_EQ(json::serialize(h.read().at("error")), R"({"code":-32602,"message":"unknown tool: nope"})");
  h.request(9, "tool.call", json::object{{"name", "boom"}});
  EXPECT_EQ(json::serialize(h.read().at("error")), R"({"code":-32000,"message":"it broke"})");
  h.request(10, "no.such.method", json::object{});
  EXPECT_EQ(json::serialize(h.read().at("error")), R"({"code":-32601,"message":"method not found: no.such.method"})");
}

TEST_F(CppSdk, AResultWithANonFiniteNumberIsAnsweredAsAnErrorNotAsInvalidJson) {
  h.request(11, "tool.call", json::object{{"name", "infinite"}});
  EXPECT_EQ(json::serialize(h.read().at("error")),
            R"x({"code":-32000,"message":"message holds a number JSON cannot carry (infinite or NaN)"})x");
  h.request(12, "tool.call", json::object{{"name", "echo"}, {"input", {{"text", "after"}}}});
  EXPECT_EQ(json::serialize(h.read().at("result")), R"({"content":"echo: after"})");
}

TEST_F(CppSdk, FramesSplitAtEveryByteAreReadWhole) {
  const std::string body = R"({"jsonrpc":"2.0","id":2,"method":"tool.call","params":{"name":"echo","input":{"text":"split"}}})";
  const std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (char c : frame) h.send_raw(std::string(1, c));
  EXPECT_EQ(json::serialize(h.read().at("result")), R"({"content":"echo: split"})");
}

TEST_F(CppSdk, HooksDefaultToContinue) {
  h.request(3, "hook.handle", json::object{{"kind", "before_tool_call"}, {"tool_input", {{"command", "rm -rf /"}}}});
  EXPECT_EQ(json::serialize(h.read().at("result")), R"({"action":"block","reason":"no"})");
  h.request(4, "hook.handle", json::object{{"kind", "before_tool_call"}, {"tool_input", {{"command", "ls"}}}});
  EXPECT_EQ(json::serialize(h.read().at("result")), R"({"action":"continue"})");
  h.request(5, "hook.handle", json::object{{"kind", "before_message"}});
  EXPECT_EQ(json::serialize(h.read().at("result")), R"({"action":"continue"})");
}

TEST_F(CppSdk, CommandsStreamOutputAndTasksBeforeTheirAnswer) {
  h.request(6, "command.invoke", json::object{{"command", "report"}, {"args", {"a"}}, {"request_id", "r-1"}});
  std::vector<std::string> methods;
  for (;;) {
    auto m = h.read();
    if (m.contains("id")) {
      EXPECT_EQ(json::serialize(m.at("result")), R"({"status":"ok","args":["a"]})");
      break;
    }
    methods.emplace_back(m.at("method").as_string());
    if (m.at("method") == "command.output") {
      EXPECT_EQ(m.at("params").at("request_id"), "r-1");
    }
  }
  EXPECT_EQ(methods, (std::vector<std::string>{"task.start", "task.update", "command.output", "task.done", "command.output"}));
}

TEST_F(CppSdk, RequestsToTheHostWaitForItsReply) {
  h.request(11, "tool.call", json::object{{"name", "remember"}, {"input", {{"note", "buy milk"}}}});
  auto req = h.read();
  EXPECT_EQ(req.at("method"), "memory.append");
  EXPECT_EQ(json::serialize(req.at("params")), R"({"namespace":"notes","content":"buy milk","tags":["@note"]})");
  h.send(json::object{{"jsonrpc", "2.0"}, {"id", req.at("id")}, {"result", {{"ok", true}, {"timestamp_ms", 5}}}});
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","id":11,"result":{"ok":true,"timestamp_ms":5}})");
  h.request(12, "tool.call", json::object{{"name", "remember"}, {"input", {{"note", "x"}}}});
  req = h.read();
  h.send(json::object{{"jsonrpc", "2.0"},
                      {"id", req.at("id")},
                      {"error", {{"code", -32602}, {"message", "permission denied: memory.write required"}}}});
  EXPECT_NE(json::serialize(h.read().at("error")).find("permission denied: memory.write required"), std::string::npos);
}

TEST_F(CppSdk, CancelRequestReachesTheRunningHandler) {
  h.request(13, "tool.call", json::object{{"name", "wait_cancel"}});
  h.send(json::object{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", 13}}}});
  EXPECT_EQ(json::serialize(h.read().at("result")), R"({"cancelled":true})");
}

TEST_F(CppSdk, ShutdownIsAnsweredAndEndsRun) {
  h.request(14, "shutdown", nullptr);
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","id":14,"result":null})");
  h.close_input();
  for (int i = 0; i < 2000 && h.status.load() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(h.status.load(), 0);
}

}  // namespace
