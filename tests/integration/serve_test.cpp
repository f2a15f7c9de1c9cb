// `exthost serve` driven end to end by a test client over its stdin and stdout.
#include <gtest/gtest.h>

#include <fstream>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <regex>
#include <set>

#include "../support/plugin_dir.hpp"
#include "../support/proc.hpp"
#include "../support/serve_client.hpp"
#include "exthost/serve.hpp"
#include "wire/frame_parser.hpp"
#include "wire/frame_writer.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

using exthost::testing::cli_server;
using exthost::testing::serve_in_child;
using exthost::testing::ServeClient;
using exthost::testing::ServerMain;

// What is left of `total` since `start`.
std::chrono::milliseconds left_of(std::chrono::steady_clock::time_point start, std::chrono::milliseconds total) {
  return total - std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

// Waits until `pred` holds, for at most `bound`; returns pred().
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!pred() && std::chrono::steady_clock::now() < deadline) ::usleep(20'000);
  return pred();
}

// The one extension child of a server process; -1 (and a failure) if there is not exactly one.
pid_t only_extension_of(pid_t server) {
  const auto children = exthost::testing::child_pids(server);
  if (children.size() != 1) {
    ADD_FAILURE() << "expected one extension child, found " << children.size();
    return -1;
  }
  return children.front();
}

// Sends a call to a loaded extension and waits until the extension has read it, so that
// the call is running when the test goes on.
int send_call_and_wait_until_read(ServeClient& client, pid_t extension, const std::string& tool) {
  const long long before = exthost::testing::read_chars(extension);
  const int id = client.send_request("tool.call", json::object{{"tool", tool}});
  EXPECT_TRUE(eventually([&] { return exthost::testing::read_chars(extension) > before; }, std::chrono::seconds(10)))
      << "the extension never read the call";
  return id;
}

class ServeTest : public ::testing::Test {
 protected:
  TempRoot root{"serve"};
};

// Four pipelined host.load of one hook plugin used to all succeed: four processes under
// one id, one listed, the hook run four times per tool call.
TEST_F(ServeTest, PipelinedLoadsOfOnePluginStartOneExtension) {
  const auto tools = write_fake_plugin(root.path(), "tools", {"echo"});
  const auto guard = write_fake_plugin(root.path(), "guard", {"hook", R"({"action":"continue"})", (root.path() / "hooks.log").string()},
                                       R"({"permissions":["tools.intercept"],"hooks":[{"hook":"before_tool_call"}]})");
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", tools.string()}}).contains("result"));
  std::vector<int> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(client.send_request("host.load", json::object{{"path", guard.string()}}));
  int loaded = 0, refused = 0;
  for (std::size_t seen = 0; seen < ids.size();) {
    auto msg = client.next();
    ASSERT_TRUE(msg);
    if (!msg->contains("id")) continue;
    ++seen;
    if (msg->contains("result")) {
      ++loaded;
    } else {
      EXPECT_EQ(msg->at("error").at("message"), "host.load: Extension 'guard' is already loaded") << json::serialize(*msg);
      ++refused;
    }
  }
  EXPECT_EQ(loaded, 1);
  EXPECT_EQ(refused, 3);
  EXPECT_EQ(client.call("host.list", json::object{}).at("result").at("extensions").as_array().size(), 2u);
  ASSERT_TRUE(client.call("tool.call", json::object{{"tool", "tools:echo"}, {"input", json::object{}}}).contains("result"));
  std::ifstream log(root.path() / "hooks.log");
  std::size_t hook_runs = 0;
  for (std::string line; std::getline(log, line);) ++hook_runs;
  EXPECT_EQ(hook_runs, 1u) << "the hook ran once per tool call";
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

// A client that stopped reading and then closed its input used to leave the server (and
// its extensions) running forever: held back by the full output, it never read the end.
TEST_F(ServeTest, AClientThatStopsReadingThenClosesItsInputEndsTheServer) {
  const auto big = write_fake_plugin(root.path(), "big", {"sized"});
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", big.string()}}).contains("result"));
  for (int i = 0; i < 6; ++i) client.send_request("tool.call", json::object{{"tool", "big:echo"}, {"input", {{"bytes", 3'000'000}}}});
  ::usleep(2'000'000);  // the replies fill the output, the server holds its input back
  client.close_input();
  EXPECT_EQ(client.wait_exit(std::chrono::seconds(15)), 0);
}

// An error about a huge client text stays under the frame cap and keeps the request's id, so
// the client can still match it: the message is cut, and the data does not echo the text (an
// unknown tool names no extension).
TEST_F(ServeTest, AnErrorAboutAHugeToolNameKeepsTheIdAndStaysUnderTheCap) {
  ServeClient client(root.path() / "home");
  const std::string name(4'150'000, 't');
  auto r = client.call("tool.call", json::object{{"tool", name}});
  ASSERT_TRUE(r.contains("error")) << json::serialize(r).substr(0, 200);
  EXPECT_LT(r.at("error").at("message").as_string().size(), 100'000u);
  EXPECT_TRUE(r.at("error").at("data").at("extension").is_null());
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

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
  EXPECT_EQ(blocked.at("error").at("message"),
            "tool.call: Tool 'tools:echo' blocked by hook: rm -rf is not allowed (extension 'guard')");
  EXPECT_EQ(blocked.at("error").at("data").at("kind"), "extension");
  EXPECT_EQ(blocked.at("error").at("data").at("method"), "tool.call");
  EXPECT_EQ(blocked.at("error").at("data").at("extension"), "guard") << "the extension whose hook blocked it";
  EXPECT_EQ(blocked.at("error").at("data").at("cause"), "blocked");

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

// Ids come back as the bytes that carried them: a number keeps its spelling however large,
// small or precise, in replies, errors and stream notifications alike.
TEST_F(ServeTest, IdsAreEchoedExactlyAsTheirBytesCameIn) {
  const auto provider = write_fake_plugin(root.path(), "prov", {"provider", "2"},
                                          R"({"permissions":["tools.register","providers.register"]})");
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", provider.string()}}).contains("result"));
  auto request = [](const std::string& id, const std::string& method, const std::string& params) {
    return exthost::wire::FrameWriter::frame(R"({"jsonrpc":"2.0", "id" : )" + id + R"( ,"method":")" + method +
                                             R"(","params":)" + params + "}");
  };
  for (const std::string id : {"1e400", "18446744073709551616", "-123456789012345678901234567890", "1.0", "1E2", "-0",
                               "0.5e-400", R"("a\u0062")", "7"}) {
    client.send_raw(request(id, "host.list", "{}"));
    auto body = client.next_raw();
    ASSERT_TRUE(body) << id;
    EXPECT_TRUE(body->starts_with(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)")) << *body;
  }
  client.send_raw(request("1.0", "no.such", "{}"));
  auto unknown = client.next_raw();
  ASSERT_TRUE(unknown);
  EXPECT_EQ(*unknown, R"({"jsonrpc":"2.0","id":1.0,"error":{"code":-32601,"message":"method not found: no.such"}})");
  client.send_raw(exthost::wire::FrameWriter::frame(R"({"jsonrpc":"2.0","id":1e400})"));
  auto invalid = client.next_raw();
  ASSERT_TRUE(invalid);
  EXPECT_TRUE(invalid->starts_with(R"({"jsonrpc":"2.0","id":1e400,"error":{"code":-32600,)")) << *invalid;

  client.send_raw(request("5", "tool.call", R"({"tool":"x:y","input":{"n":1e999}})"));
  auto refused = client.next_raw();
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused, R"({"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"tool.call: invalid params: a number is beyond the double range"}})");

  client.send_raw(request("1e400", "provider.stream", R"({"id":"prov","params":{"model":"m1","messages":[]}})"));
  std::size_t events = 0;
  for (;;) {
    auto body = client.next_raw();
    ASSERT_TRUE(body);
    if (body->find(R"("method":"provider.stream.event")") == std::string::npos) {
      EXPECT_TRUE(body->starts_with(R"({"jsonrpc":"2.0","id":1e400,"result":)")) << *body;
      break;
    }
    EXPECT_NE(body->find(R"("params":{"request_id":1e400,"event":)"), std::string::npos) << *body;
    ++events;
  }
  EXPECT_GE(events, 2u);
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

// A reply may not exceed the client's 4 MiB frame cap: a result that would becomes an error
// naming the method and the extension, and a result just under the cap arrives whole.
TEST_F(ServeTest, AResultOverTheFrameCapBecomesAnErrorNamingTheMethodAndTheExtension) {
  const auto big = write_fake_plugin(root.path(), "big", {"sized"});
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", big.string()}}).contains("result"));
  constexpr std::int64_t cap = 4 * 1024 * 1024;
  // The extension's own reply is exactly the cap, which it may send; wrapped for the client
  // ({"result": …} and the client's id) it is over.
  auto over = client.call("tool.call", json::object{{"tool", "big:echo"}, {"input", {{"frame_bytes", cap}}}});
  ASSERT_TRUE(over.contains("error") && over.at("error").is_object()) << json::serialize(over).substr(0, 200);
  EXPECT_EQ(over.at("error").at("code"), -32002);
  const std::string message(over.at("error").at("message").as_string());
  EXPECT_TRUE(std::regex_match(message, std::regex(R"(tool\.call: Extension 'big': result of (\d+) bytes exceeds the 4 MiB frame cap)")))
      << message;
  EXPECT_EQ(json::serialize(over.at("error").at("data")),
            R"({"kind":"extension","method":"tool.call","extension":"big","cause":"output_limit"})");

  auto under = client.call("tool.call", json::object{{"tool", "big:echo"}, {"input", {{"frame_bytes", cap - 64}}}});
  ASSERT_TRUE(under.contains("result")) << json::serialize(under).substr(0, 200);
  EXPECT_GT(under.at("result").at("result").at("content").as_string().size(), static_cast<std::size_t>(cap - 200));
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

// A request that throws deep inside the host (here the host cannot make the relative plugin
// path absolute, because the server's working directory was removed) is answered with an
// error naming the method, and the server carries on. It used to end the server.
TEST_F(ServeTest, AnExceptionInsideARequestIsAnErrorNamingTheMethod) {
  write_fake_plugin(root.path(), "plug", {"echo"});
  const fs::path gone = root.path() / "gone";
  fs::create_directories(gone);
  ServeClient client(cli_server({"--home", (root.path() / "home").string()}, [gone] {
    if (::chdir(gone.c_str()) != 0 || ::rmdir(gone.c_str()) != 0) ::_exit(126);
  }));
  auto failed = client.call("host.load", json::object{{"path", "../plug"}});
  ASSERT_TRUE(failed.contains("error") && failed.at("error").is_object()) << json::serialize(failed);
  const std::string message(failed.at("error").at("message").as_string());
  EXPECT_EQ(message.rfind("host.load: ", 0), 0u) << message;
  EXPECT_NE(message.find("../plug"), std::string::npos) << message;
  EXPECT_TRUE(client.call("host.list", json::object{}).contains("result")) << "the server carries on";
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

// A stream to a client that reads nothing: the host's I/O thread never waits for the client,
// so another extension's 1 s deadline still fires (it sends $/cancelRequest, which the
// extension records) while the stream is held back; the server's memory stays bounded while
// the whole 128 MiB flood passes through it; the stream ends with an error after the
// events that could be kept, in order, none missing before the cut.
TEST_F(ServeTest, AStreamToAClientThatDoesNotReadBlocksNoOtherExtensionAndHoldsBoundedMemory) {
  const auto provider = write_fake_plugin(root.path(), "prov", {"provider", "1"},
                                          R"({"permissions":["tools.register","providers.register"]})");
  const fs::path marker_file = root.path() / "cancelled";
  const auto marker = write_fake_plugin(root.path(), "marker", {"cancel-marker", marker_file.string()});
  auto options = exthost::testing::isolated_options(root.path() / "home");
  options.tool_call_timeout = std::chrono::seconds(1);
  ServeClient client(serve_in_child(options));
  ASSERT_TRUE(client.call("host.load", json::object{{"path", provider.string()}}).contains("result"));
  ASSERT_TRUE(client.call("host.load", json::object{{"path", marker.string()}}).contains("result"));

  constexpr std::int64_t count = 8000, pad = 16 * 1024;
  const long rss_before = exthost::testing::status_kib(client.pid(), "VmRSS");
  const long long read_before = exthost::testing::read_chars(client.pid());
  const int stream_id = client.send_request(
      "provider.stream", json::object{{"id", "prov"},
                                      {"params", {{"model", "m1"}, {"messages", json::array{}}, {"flood", {{"count", count}, {"pad", pad}}}}}});
  const int call_id = client.send_request("tool.call", json::object{{"tool", "marker:echo"}});
  EXPECT_TRUE(eventually([&] { return fs::exists(marker_file); }, std::chrono::seconds(10)))
      << "the other extension's 1 s deadline did not fire while the stream waited for the client";
  EXPECT_TRUE(eventually([&] { return exthost::testing::read_chars(client.pid()) - read_before > count * pad; },
                         std::chrono::seconds(30)))
      << "the host stopped reading the streaming extension";
  if (exthost::testing::k_memory_is_measurable) {
    EXPECT_LT(exthost::testing::status_kib(client.pid(), "VmHWM") - rss_before, 64 * 1024)
        << "KiB the server grew by while the client read nothing";
  }

  std::optional<json::object> stream_reply, call_reply;
  std::int64_t next_index = 0;
  while (!stream_reply || !call_reply) {
    auto msg = client.next();
    ASSERT_TRUE(msg);
    if (msg->contains("method")) {
      EXPECT_EQ(msg->at("params").at("request_id"), stream_id);
      const auto& event = msg->at("params").at("event");
      if (event.at("type") != "text") continue;
      const std::string text(event.at("text").as_string());
      EXPECT_EQ(text.substr(0, text.find(':')), std::to_string(next_index)) << "events arrive in order, none missing";
      ++next_index;
    } else if (msg->at("id") == stream_id) {
      stream_reply = *msg;
    } else if (msg->at("id") == call_id) {
      call_reply = *msg;
    }
  }
  EXPECT_GT(next_index, 0);
  EXPECT_LT(next_index, count);
  ASSERT_TRUE(stream_reply->contains("error")) << json::serialize(*stream_reply).substr(0, 300);
  EXPECT_EQ(stream_reply->at("error").at("code"), -32004);
  EXPECT_EQ(stream_reply->at("error").at("message").as_string().find("provider.stream: Extension 'prov': "), 0u)
      << stream_reply->at("error").at("message");
  EXPECT_EQ(stream_reply->at("error").at("data").at("kind"), "output");
  ASSERT_TRUE(call_reply->contains("error"));
  EXPECT_EQ(call_reply->at("error").at("code"), -32003);
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

// A client that stops reading while its requests produce 512 KiB replies: the memory the
// server holds for it is bounded by bytes (the output queue, and the replies of requests
// already running), not by the count of requests; every reply still arrives once it reads.
TEST_F(ServeTest, RepliesAClientDoesNotReadHoldBoundedMemory) {
  const auto big = write_fake_plugin(root.path(), "big", {"sized"});
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", big.string()}}).contains("result"));
  constexpr int requests = 300;
  constexpr std::int64_t reply_bytes = 512 * 1024;
  const long rss_before = exthost::testing::status_kib(client.pid(), "VmRSS");
  const long long read_before = exthost::testing::read_chars(client.pid());
  std::set<int> ids;
  for (int i = 0; i < requests; ++i) {
    ids.insert(client.send_request("tool.call", json::object{{"tool", "big:echo"}, {"input", {{"bytes", reply_bytes}}}}));
  }
  // Wait until the replies of the 64 requests that may run at once have reached the server,
  // then until it reads no more.
  auto read_so_far = [&] { return exthost::testing::read_chars(client.pid()) - read_before; };
  EXPECT_TRUE(eventually([&] { return read_so_far() > 64 * reply_bytes; }, std::chrono::seconds(30)));
  for (long long last = -1; last != read_so_far();) {
    last = read_so_far();
    ::usleep(1'000'000);
  }
  if (exthost::testing::k_memory_is_measurable) {
    EXPECT_LT(exthost::testing::status_kib(client.pid(), "VmHWM") - rss_before, 80 * 1024)
        << "KiB the server grew by while the client read nothing";
  }
  while (!ids.empty()) {
    auto msg = client.next();
    ASSERT_TRUE(msg);
    ASSERT_TRUE(msg->contains("result")) << json::serialize(*msg).substr(0, 300);
    EXPECT_EQ(msg->at("result").at("result").at("content").as_string().size(), static_cast<std::size_t>(reply_bytes));
    ids.erase(static_cast<int>(msg->at("id").as_int64()));
  }
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

// host.shutdown during a call that would run 60 s: the call is cancelled (answered with an
// error), then host.shutdown is answered, and the server ends within 10 s.
TEST_F(ServeTest, ShutdownCancelsARunningCallAnswersItAndEndsPromptly) {
  const auto slow = write_fake_plugin(root.path(), "slow", {"slow-call", "60000"});
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", slow.string()}}).contains("result"));
  const int call_id = send_call_and_wait_until_read(client, only_extension_of(client.pid()), "slow:echo");
  const auto stop_started = std::chrono::steady_clock::now();
  const int shutdown_id = client.send_request("host.shutdown", json::object{});
  auto first = client.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->at("id"), call_id) << "the cancelled call is answered before host.shutdown";
  ASSERT_TRUE(first->contains("error")) << json::serialize(*first);
  EXPECT_NE(first->at("error").at("message").as_string().find("extension shutdown"), std::string::npos)
      << first->at("error").at("message");
  auto second = client.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->at("id"), shutdown_id);
  EXPECT_EQ(json::serialize(second->at("result")), R"({"ok":true})");
  EXPECT_EQ(client.wait_exit(left_of(stop_started, std::chrono::seconds(10))), 0);
}

// The end of the input stops the server just as promptly, answering the running call.
TEST_F(ServeTest, TheEndOfTheInputCancelsARunningCallAndEndsPromptly) {
  const auto slow = write_fake_plugin(root.path(), "slow", {"slow-call", "60000"});
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(client.call("host.load", json::object{{"path", slow.string()}}).contains("result"));
  const int call_id = send_call_and_wait_until_read(client, only_extension_of(client.pid()), "slow:echo");
  const auto stop_started = std::chrono::steady_clock::now();
  client.close_input();
  auto reply = client.next();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->at("id"), call_id);
  EXPECT_TRUE(reply->contains("error")) << json::serialize(*reply);
  EXPECT_EQ(client.wait_exit(left_of(stop_started, std::chrono::seconds(10))), 0);
}

// A byte on stop_fd stops the server as the end of the input does, the input still open.
TEST_F(ServeTest, AByteOnTheStopPipeStopsAsTheEndOfTheInputDoes) {
  const auto slow = write_fake_plugin(root.path(), "slow", {"slow-call", "60000"});
  ServeClient client(serve_in_child(exthost::testing::isolated_options(root.path() / "home")));
  ASSERT_TRUE(client.call("host.load", json::object{{"path", slow.string()}}).contains("result"));
  const int call_id = send_call_and_wait_until_read(client, only_extension_of(client.pid()), "slow:echo");
  const auto stop_started = std::chrono::steady_clock::now();
  client.send_stop_byte();
  auto reply = client.next();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->at("id"), call_id);
  ASSERT_TRUE(reply->contains("error")) << json::serialize(*reply);
  EXPECT_NE(reply->at("error").at("message").as_string().find("extension shutdown"), std::string::npos)
      << reply->at("error").at("message");
  EXPECT_EQ(client.wait_exit(left_of(stop_started, std::chrono::seconds(10))), 0);
}

// A second byte kills every extension at once. Here the stop ladder would wait a minute for
// the busy extension (the host then kills what is left after its 10 s bound); after the
// second byte the server ends well before that bound.
TEST_F(ServeTest, ASecondByteOnTheStopPipeKillsEveryExtensionAtOnce) {
  const auto slow = write_fake_plugin(root.path(), "slow", {"slow-call", "60000"});
  auto options = exthost::testing::isolated_options(root.path() / "home");
  options.shutdown_request_timeout = std::chrono::seconds(60);
  options.shutdown_grace = std::chrono::seconds(60);
  ServeClient client(serve_in_child(options));
  ASSERT_TRUE(client.call("host.load", json::object{{"path", slow.string()}}).contains("result"));
  const pid_t extension = only_extension_of(client.pid());
  const int call_id = send_call_and_wait_until_read(client, extension, "slow:echo");
  const auto stop_started = std::chrono::steady_clock::now();
  client.send_stop_byte();
  ::usleep(300'000);  // lets the stop begin; the kill must work at any point of it
  EXPECT_TRUE(exthost::testing::alive(extension)) << "the ladder waits for the busy extension";
  client.send_stop_byte();
  auto reply = client.next();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->at("id"), call_id);
  EXPECT_TRUE(reply->contains("error")) << json::serialize(*reply);
  EXPECT_EQ(client.wait_exit(left_of(stop_started, std::chrono::seconds(8))), 0);
  EXPECT_FALSE(exthost::testing::alive(extension));
}

}  // namespace
