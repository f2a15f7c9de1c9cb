// The header-only C++ SDK driven over real pipes by a scripted host.
#include "exthost_sdk.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <set>
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
    ::fcntl(m_to, F_SETFL, ::fcntl(m_to, F_GETFL) | O_NONBLOCK);
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
  // Writes all of `bytes` within 20 s (the pipe is non-blocking).
  void send_raw(const std::string& bytes) {
    for (std::size_t off = 0; off < bytes.size();) {
      pollfd p{m_to, POLLOUT, 0};
      if (::poll(&p, 1, 20'000) <= 0) throw std::runtime_error("the extension read nothing within 20 s");
      const ssize_t n = ::write(m_to, bytes.data() + off, bytes.size() - off);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) throw std::runtime_error("writing to the extension failed");
      off += static_cast<std::size_t>(n);
    }
  }
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
  // The next reply (or request) from the extension; notifications are kept aside.
  json::object read_reply() {
    for (;;) {
      auto m = read();
      if (m.contains("id")) return m;
      notifications.push_back(std::move(m));
    }
  }
  // Whether run() returned 0 within 20 s.
  bool run_returned() {
    for (int i = 0; i < 4000 && status.load() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return status.load() == 0;
  }
  std::unique_ptr<exthost_sdk::Extension> ext;
  std::atomic<int> status{-1};
  std::vector<json::object> notifications;

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

std::string frame_of(const std::string& body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body; }

std::string request_frame(const json::value& id, const char* method, json::value params) {
  return frame_of(json::serialize(
      json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}));
}

class CppSdk : public ::testing::Test {
 protected:
  virtual unsigned concurrency() const { return exthost_sdk::k_default_concurrency; }
  void SetUp() override {
    auto& ext = *h.ext;
    ext.concurrency(concurrency());
    ext.tool(
        "echo", "Echo text back", json::object{{"type", "object"}},
        [](exthost_sdk::Call& call) -> json::value {
          return json::object{{"content", "echo: " + std::string(call.input().at("text").as_string())}};
        },
        {.idempotent = true});
    ext.tool("remember", "Store a note", json::object{}, [&ext](exthost_sdk::Call& call) -> json::value {
      return ext.memory_append(std::string(call.input().at("note").as_string()), {"@note"});
    });
    ext.tool("recall", "Every note tagged @note", json::object{}, [&ext](exthost_sdk::Call&) -> json::value {
      json::array contents;
      for (const auto& r : ext.memory_query(json::object{{"tag_prefix", "@note"}, {"limit", 5}})) {
        contents.push_back(r.at("content"));
      }
      return json::object{{"contents", contents}};
    });
    ext.tool("wait_cancel", "Reports progress, then waits until cancelled", json::object{},
             [](exthost_sdk::Call& call) -> json::value {
               call.progress();  // tells the test it is running
               for (int i = 0; i < 4000 && !call.cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
               return json::object{{"cancelled", call.cancelled()}};
             });
    ext.tool("boom", "Fails", json::object{}, [](exthost_sdk::Call&) -> json::value {
      throw exthost_sdk::ExtensionError("it broke");
    });
    ext.tool("infinite", "Answers a number JSON cannot carry", json::object{}, [](exthost_sdk::Call&) -> json::value {
      return json::object{{"value", std::numeric_limits<double>::infinity()}};
    });
    ext.tool("wait_hook", "Waits until a hook has run", json::object{}, [this](exthost_sdk::Call&) -> json::value {
      for (int i = 0; i < 4000 && !hook_ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return json::object{{"hook_ran_first", hook_ran.load()}};
    });
    ext.tool("gate", "Runs until request 31 is cancelled, counting handlers at once", json::object{},
             [this, &ext](exthost_sdk::Call&) -> json::value {
               Active a(*this);
               for (int i = 0; i < 4000 && !ext.is_cancelled(31); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
               return json::object{{"saw_cancel", ext.is_cancelled(31)}};
             });
    ext.tool("progress", "Reports progress twice", json::object{}, [this](exthost_sdk::Call& call) -> json::value {
      const bool first = call.progress();
      const bool second = call.progress();
      std::lock_guard lock(calls_mutex);
      answered_call = std::make_shared<exthost_sdk::Call>(call);
      return json::object{{"sent", json::array{first, second}}};
    });
    ext.tool("huge", "Answers more than the frame cap", json::object{}, [](exthost_sdk::Call&) -> json::value {
      return json::object{{"content", std::string(exthost_sdk::k_max_frame_body, 'x')}};
    });
    ext.tool("not_utf8", "Answers bytes that are not UTF-8", json::object{}, [](exthost_sdk::Call&) -> json::value {
      return json::object{{"content", "file-\xff.txt"},
                          {"key-\xc3", json::array{"\xe2\x82", "ok \xe2\x82\xac", "\xed\xa0\x80", "\xf4\x90\x80\x80"}}};
    });
    ext.tool("deep", "Answers JSON nested deeper than the host accepts", json::object{},
             [](exthost_sdk::Call&) -> json::value {
               json::value v = json::array{};
               for (std::size_t i = 0; i < exthost_sdk::k_max_json_depth; ++i) v = json::array{v};
               return v;
             });
    ext.hook("before_tool_call", [this](exthost_sdk::Call& call) -> json::value {
      Active a(*this);
      hook_ran = true;
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
  // Counts the handlers running at once.
  struct Active {
    explicit Active(CppSdk& test) : t(test) {
      const int now = ++t.active_now;
      int most = t.active_most.load();
      while (now > most && !t.active_most.compare_exchange_weak(most, now)) {
      }
    }
    ~Active() { --t.active_now; }
    CppSdk& t;
  };
  void expect_still_serving(int id = 99) {
    h.request(id, "tool.call", json::object{{"name", "echo"}, {"input", {{"text", "still here"}}}});
    EXPECT_EQ(json::serialize(h.read_reply()),
              R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{"content":"echo: still here"}})");
  }
  Harness h;
  json::object init;
  std::atomic<bool> hook_ran{false};
  std::atomic<int> active_now{0}, active_most{0};
  std::mutex calls_mutex;
  std::shared_ptr<exthost_sdk::Call> answered_call;
};

class CppSdkSequential : public CppSdk {
 protected:
  unsigned concurrency() const override { return 1; }
};

TEST_F(CppSdk, InitializeDeclaresToolsHooksCancellationAndConcurrency) {
  EXPECT_EQ(init.at("id"), 1);
  const auto& caps = init.at("result").at("capabilities").as_object();
  EXPECT_EQ(init.at("result").at("protocol_version"), 1);
  EXPECT_EQ(caps.at("tools").as_array().size(), 12u);
  // Only the tool registered as idempotent says so.
  EXPECT_EQ(caps.at("tools").as_array()[0].at("idempotent"), true);
  EXPECT_FALSE(caps.at("tools").as_array()[1].as_object().contains("idempotent"));
  EXPECT_EQ(caps.at("cancellation"), true);
  EXPECT_EQ(caps.at("concurrency"), 8);
  EXPECT_EQ(exthost_sdk::k_default_concurrency, 8u);
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
            R"x({"code":-32000,"message":"message holds a number JSON cannot carry (infinite or NaN) (the result of tool.call)"})x");
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

TEST_F(CppSdk, AMemoryQueryFollowsTheHostsPages) {
  h.request(13, "tool.call", json::object{{"name", "recall"}, {"input", json::object{}}});
  auto first = h.read();
  EXPECT_EQ(first.at("method"), "memory.query");
  EXPECT_EQ(json::serialize(first.at("params")), R"({"tag_prefix":"@note","limit":5,"namespace":"notes"})");
  h.send(json::object{{"jsonrpc", "2.0"},
                      {"id", first.at("id")},
                      {"result", {{"records", json::array{json::object{{"content", "a"}}, json::object{{"content", "b"}}}}, {"next_cursor", "m1.9.2.3"}}}});
  auto second = h.read();
  EXPECT_EQ(json::serialize(second.at("params")),
            R"({"tag_prefix":"@note","limit":5,"namespace":"notes","cursor":"m1.9.2.3"})");
  h.send(json::object{{"jsonrpc", "2.0"},
                      {"id", second.at("id")},
                      {"result", {{"records", json::array{json::object{{"content", "c"}}}}, {"next_cursor", nullptr}}}});
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","id":13,"result":{"contents":["a","b","c"]}})");
}

TEST_F(CppSdk, ShutdownIsAnsweredAndEndsRun) {
  h.request(14, "shutdown", nullptr);
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","id":14,"result":null})");
  EXPECT_TRUE(h.run_returned());
}

TEST_F(CppSdk, CancelRequestReachesTheRunningHandler) {
  h.request(13, "tool.call", json::object{{"name", "wait_cancel"}});
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","method":"$/progress","params":{"id":13}})");
  h.send(json::object{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", 13}}}});
  // A request cancelled while it runs is still answered, with what its handler returns.
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","id":13,"result":{"cancelled":true}})");
}

TEST_F(CppSdk, ACancelForAnUnknownIdChangesNothing) {
  for (const json::value& target : {json::value(999), json::value("nope"), json::value(nullptr), json::value(json::array{1})}) {
    h.send(json::object{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", target}}}});
  }
  h.send(json::object{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", "junk"}});
  expect_still_serving(15);
}

TEST_F(CppSdk, AHookIsAnsweredWhileALongToolRuns) {
  h.request(20, "tool.call", json::object{{"name", "wait_hook"}});
  h.request(21, "hook.handle", json::object{{"kind", "before_tool_call"}, {"tool_input", {{"command", "ls"}}}});
  EXPECT_EQ(json::serialize(h.read_reply()), R"({"jsonrpc":"2.0","id":21,"result":{"action":"continue"}})");
  EXPECT_EQ(json::serialize(h.read_reply()), R"({"jsonrpc":"2.0","id":20,"result":{"hook_ran_first":true}})");
}

TEST_F(CppSdk, PipelinedRequestsAreAllAnsweredWithTheirIds) {
  std::string frames;
  std::set<std::string> expected;
  for (int i = 0; i < 16; ++i) {
    for (const json::value& id : {json::value(100 + i), json::value("s-" + std::to_string(i))}) {
      frames += request_frame(id, "tool.call", json::object{{"name", "echo"}, {"input", {{"text", json::serialize(id)}}}});
      expected.insert(json::serialize(id));
    }
  }
  h.send_raw(frames);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    auto reply = h.read_reply();
    const std::string id = json::serialize(reply.at("id"));
    EXPECT_EQ(json::serialize(reply.at("result")), json::serialize(json::object{{"content", "echo: " + id}}));
    seen.insert(id);
  }
  EXPECT_EQ(seen, expected);
}

TEST_F(CppSdk, ProgressIsSentForTheRunningRequestAndNeverAfterItsReply) {
  h.request(40, "tool.call", json::object{{"name", "progress"}});
  auto reply = h.read_reply();
  EXPECT_EQ(reply.at("id"), 40);
  const auto& sent = reply.at("result").at("sent").as_array();
  EXPECT_EQ(sent.at(0), true);
  const auto progress_count = static_cast<std::size_t>(std::count(sent.begin(), sent.end(), json::value(true)));
  ASSERT_EQ(h.notifications.size(), progress_count);
  for (const auto& n : h.notifications) {
    EXPECT_EQ(json::serialize(n), R"({"jsonrpc":"2.0","method":"$/progress","params":{"id":40}})");
  }
  std::lock_guard lock(calls_mutex);
  ASSERT_TRUE(answered_call);
  EXPECT_FALSE(answered_call->progress());
}

TEST_F(CppSdkSequential, ConcurrencyOneIsDeclaredAndRunsOneHandlerAtATime) {
  EXPECT_EQ(init.at("result").at("capabilities").at("concurrency"), 1);
  // 30 runs until 31 is cancelled; 31 and the hook 32 wait behind it.
  h.request(30, "tool.call", json::object{{"name", "gate"}});
  h.request(31, "tool.call", json::object{{"name", "echo"}, {"input", {{"text", "late"}}}});
  h.request(32, "hook.handle", json::object{{"kind", "before_tool_call"}, {"tool_input", json::object{}}});
  h.send(json::object{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", 31}}}});
  EXPECT_EQ(json::serialize(h.read_reply()), R"({"jsonrpc":"2.0","id":30,"result":{"saw_cancel":true}})");
  // Cancelled before it started: answered at once, its handler never runs.
  EXPECT_EQ(json::serialize(h.read_reply()),
            R"({"jsonrpc":"2.0","id":31,"error":{"code":-32800,"message":"tool.call was cancelled before it started"}})");
  EXPECT_EQ(json::serialize(h.read_reply()), R"({"jsonrpc":"2.0","id":32,"result":{"action":"continue"}})");
  EXPECT_EQ(active_most.load(), 1);
}

TEST(CppSdkOptions, ConcurrencyOutsideOneToSixtyFourIsRefused) {
  exthost_sdk::Extension ext(-1, -1);
  EXPECT_THROW(ext.concurrency(0), std::invalid_argument);
  EXPECT_THROW(ext.concurrency(65), std::invalid_argument);
  ext.concurrency(64);
  EXPECT_EQ(ext.concurrency(), 64u);
}

TEST_F(CppSdk, AResultOverTheFrameCapIsAnErrorNamingTheMethod) {
  h.request(60, "tool.call", json::object{{"name", "huge"}});
  auto reply = h.read_reply();
  EXPECT_EQ(reply.at("id"), 60);
  const std::string message(reply.at("error").at("message").as_string());
  EXPECT_EQ(reply.at("error").at("code"), -32000);
  EXPECT_NE(message.find("over the host's frame cap of 4194304 bytes (the result of tool.call)"), std::string::npos) << message;
  expect_still_serving(61);
}

TEST_F(CppSdk, AResultNestedDeeperThanTheHostAcceptsIsAnError) {
  h.request(62, "tool.call", json::object{{"name", "deep"}});
  EXPECT_EQ(std::string(h.read_reply().at("error").at("message").as_string()),
            "message nested deeper than 128 levels, which the host refuses (the result of tool.call)");
  expect_still_serving(63);
}

TEST_F(CppSdk, StringsThatAreNotUtf8AreSentWithReplacementCharacters) {
  h.request(64, "tool.call", json::object{{"name", "not_utf8"}});
  // read() parses strictly: a byte that is not UTF-8 would fail it.
  EXPECT_EQ(json::serialize(h.read_reply()),
            "{\"jsonrpc\":\"2.0\",\"id\":64,\"result\":{\"content\":\"file-\xEF\xBF\xBD.txt\",\"key-\xEF\xBF\xBD\":"
            "[\"\xEF\xBF\xBD\",\"ok \xE2\x82\xAC\",\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\","
            "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"]}}");
}

TEST_F(CppSdk, InvalidUtf8InARequestIsAnsweredWithAnError) {
  const std::string body = "{\"jsonrpc\":\"2.0\",\"id\":50,\"method\":\"tool.call\",\"params\":{\"name\":\"echo\",\"input\":{\"text\":\"a\xff" "b\"}}}";
  h.send_raw(frame_of(body));
  EXPECT_EQ(json::serialize(h.read_reply()),
            R"({"jsonrpc":"2.0","id":50,"error":{"code":-32700,"message":"request tool.call refused: invalid UTF-8 at byte )" +
                std::to_string(body.find('\xff')) + R"( of the frame body"}})");
  expect_still_serving(51);
}

TEST_F(CppSdk, FramesWithoutAUsableIdAreDroppedAndReadingGoesOn) {
  for (const std::string& body : {std::string("\xff\xfe not json"), std::string("{not json"), std::string("[1,2]"),
                                 std::string(R"({"id":{"x":1},"method":"m"})"), std::string(R"({"id":7,"method":5})"),
                                 std::string(100000, '['), std::string("{\"jsonrpc\":\"2.0\",\"id\":\"x\xff\"")}) {
    h.send_raw(frame_of(body));
  }
  h.send_raw("Content-Length: " + std::to_string(exthost_sdk::k_max_frame_body + 1) + "\r\n\r\n");
  h.send_raw(std::string(exthost_sdk::k_max_frame_body + 1, ' '));
  // The one with a numeric id but no string method is answered as invalid.
  EXPECT_EQ(h.read_reply().at("error").at("code"), -32600);
  expect_still_serving(52);
}

TEST_F(CppSdk, AnUnreadableHeaderEndsTheInputWithoutKillingAnything) {
  h.send_raw("Content-Length: twelve\r\n\r\n{}");
  EXPECT_TRUE(h.run_returned());
}

TEST_F(CppSdk, DeeplyNestedRequestsFromTheHostAreServed) {
  json::value deep = json::object{};
  for (int i = 0; i < 100; ++i) deep = json::object{{"d", deep}};
  h.request(70, "tool.call", json::object{{"name", "echo"}, {"input", {{"text", "deep"}, {"extra", deep}}}});
  EXPECT_EQ(json::serialize(h.read_reply()), R"({"jsonrpc":"2.0","id":70,"result":{"content":"echo: deep"}})");
}

TEST_F(CppSdk, ShutdownCancelsARunningHandlerAnswersAndReturns) {
  h.request(80, "tool.call", json::object{{"name", "wait_cancel"}});
  EXPECT_EQ(json::serialize(h.read()), R"({"jsonrpc":"2.0","method":"$/progress","params":{"id":80}})");
  h.request(81, "shutdown", nullptr);
  std::map<std::string, std::string> replies;
  for (int i = 0; i < 2; ++i) {
    auto r = h.read_reply();
    replies[json::serialize(r.at("id"))] = json::serialize(r);
  }
  EXPECT_EQ(replies["81"], R"({"jsonrpc":"2.0","id":81,"result":null})");
  EXPECT_EQ(replies["80"], R"({"jsonrpc":"2.0","id":80,"result":{"cancelled":true}})");
  EXPECT_TRUE(h.run_returned());
}

}  // namespace
