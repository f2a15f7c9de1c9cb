// `exthost serve`: a client's "$/cancelRequest" cancels its running request, and error
// replies carry what the extension said (its own code and data) and which extension it was.
// Real children: the fake extension in mode cancel-record leaves requests running and records
// each "$/cancelRequest" it receives. Every wait is bounded; nothing asserts a duration.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "../support/plugin_dir.hpp"
#include "../support/serve_client.hpp"
#include "../support/within.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using exthost::testing::eventually;
using exthost::testing::ServeClient;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

// How long the extension may take to receive a request or a cancel.
constexpr std::chrono::seconds k_bound{10};

constexpr const char* k_cancel = "$/cancelRequest";

class ServeCancel : public ::testing::Test {
 protected:
  TempRoot root{"serve-cancel"};
  fs::path log = root.path() / "record.jsonl";

  // The cancel-record extension "rec" as a plugin directory.
  fs::path plugin() {
    return write_fake_plugin(root.path(), "rec", {"cancel-record", log.string()},
                             R"({"permissions":["tools.register","providers.register"]})");
  }

  // Loads "rec"; false (and a failure saying why) if it did not load.
  bool load(ServeClient& client) {
    const auto loaded = client.call("host.load", json::object{{"path", plugin().string()}});
    EXPECT_TRUE(loaded.contains("result")) << json::serialize(loaded);
    return loaded.contains("result");
  }

  // What the extension recorded so far, one object a line.
  std::vector<json::object> records() const {
    std::vector<json::object> out;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(json::parse(line).as_object());
    }
    return out;
  }

  // The extension's own id of the request `method` it left running, once it has it.
  std::optional<json::value> received(const std::string& method) const {
    for (const auto& r : records()) {
      if (r.contains("received") && r.at("received").as_string() == method) return r.at("id");
    }
    return std::nullopt;
  }

  // Waits until the extension holds a `method` request; its id there.
  json::value wait_received(const std::string& method) const {
    EXPECT_TRUE(eventually([&] { return received(method).has_value(); }, k_bound)) << "no " << method << " arrived";
    return received(method).value_or(json::value(nullptr));
  }

  // The ids of every "$/cancelRequest" the extension received, in order.
  std::vector<json::value> cancels() const {
    std::vector<json::value> out;
    for (const auto& r : records()) {
      if (r.contains("cancel")) out.push_back(r.at("cancel"));
    }
    return out;
  }

  // Waits until the extension has received a cancel for its request `id`.
  bool cancel_received_for(const json::value& id) const {
    return eventually(
        [&] {
          for (const auto& c : cancels()) {
            if (c == id) return true;
          }
          return false;
        },
        k_bound);
  }
};

void expect_shutdown(ServeClient& client) {
  EXPECT_EQ(client.call("host.shutdown", json::object{}).at("result").at("ok"), true);
  EXPECT_EQ(client.wait_exit(), 0);
}

TEST_F(ServeCancel, ACancelledToolCallAnswersRequestCancelledAndTheExtensionGetsItsOwnRequestId) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));

  const int id = client.send_request("tool.call", json::object{{"tool", "rec:wait"}});
  const json::value extension_id = wait_received("tool.call");
  client.send_notification(k_cancel, json::object{{"id", id}});
  const auto reply = client.reply_to(id);
  ASSERT_TRUE(reply.contains("error")) << json::serialize(reply);
  EXPECT_EQ(reply.at("error").at("code"), -32800);
  EXPECT_EQ(reply.at("error").at("message"), "request cancelled");
  EXPECT_EQ(json::serialize(reply.at("error").at("data")),
            R"({"kind":"cancelled","method":"tool.call","extension":"rec","cause":"cancelled"})");
  EXPECT_TRUE(cancel_received_for(extension_id)) << "the extension was told which of its requests ended";

  // The abandoned call no longer holds the extension: the next one is answered.
  const auto echoed = client.call("tool.call", json::object{{"tool", "rec:echo"}, {"input", {{"n", 1}}}});
  EXPECT_EQ(json::serialize(echoed.at("result")), R"({"result":{"content":{"n":1}}})");
  expect_shutdown(client);
}

// A string id is matched by its value, a number by its spelling, which the reply echoes. The
// second call waits behind the first (one exchange at a time per extension): a cancel ends
// it there as well, before it reached the extension.
TEST_F(ServeCancel, IdsAreMatchedAsTheClientWroteThem) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  auto frame = [](const std::string& raw_id) {
    return exthost::wire::FrameWriter::frame(R"({"jsonrpc":"2.0","id":)" + raw_id +
                                             R"(,"method":"tool.call","params":{"tool":"rec:wait"}})");
  };
  client.send_raw(frame(R"("job-7")"));
  const json::value first = wait_received("tool.call");
  client.send_raw(frame("12.50"));
  client.send_raw(exthost::wire::FrameWriter::frame(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":12.50}})"));
  auto body = client.next_raw();
  ASSERT_TRUE(body);
  EXPECT_TRUE(body->starts_with(R"({"jsonrpc":"2.0","id":12.50,"error":{"code":-32800,"message":"request cancelled")"))
      << *body;
  client.send_notification(k_cancel, json::object{{"id", "job-7"}});
  body = client.next_raw();
  ASSERT_TRUE(body);
  EXPECT_TRUE(body->starts_with(R"({"jsonrpc":"2.0","id":"job-7","error":{"code":-32800,"message":"request cancelled")"))
      << *body;
  EXPECT_TRUE(cancel_received_for(first));
  // The second call may have reached the extension's pipe behind the first (an extension
  // without declared concurrency gets requests in call order) or been cancelled before:
  // either way it was cancelled at most once.
  EXPECT_LE(cancels().size(), 2u);
  expect_shutdown(client);
}

// A cancel that names no running request is a notification like any other: no reply, no
// effect on what runs, and the server goes on serving.
TEST_F(ServeCancel, ACancelForAnUnknownOrFinishedIdIsIgnored) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  const int running = client.send_request("tool.call", json::object{{"tool", "rec:wait"}});
  const json::value extension_id = wait_received("tool.call");

  client.send_notification(k_cancel, json::object{{"id", 999}});
  client.send_notification(k_cancel, json::object{{"id", "nobody"}});
  client.send_notification(k_cancel, json::object{{"id", json::array{1}}});
  client.send_notification(k_cancel, json::object{});
  client.send_notification(k_cancel, nullptr);
  const auto listed = client.call("host.list", json::object{});
  ASSERT_TRUE(listed.contains("result")) << json::serialize(listed);
  EXPECT_EQ(listed.at("result").at("extensions").as_array().size(), 1u);
  EXPECT_TRUE(client.notifications.empty()) << json::serialize(client.notifications.front());
  EXPECT_TRUE(cancels().empty()) << "the running call was not touched";

  // Finished: its cancel is ignored too.
  const int done = client.send_request("host.list", json::object{});
  ASSERT_TRUE(client.reply_to(done).contains("result"));
  client.send_notification(k_cancel, json::object{{"id", done}});
  ASSERT_TRUE(client.call("host.tools", json::object{}).contains("result"));
  EXPECT_TRUE(client.notifications.empty()) << json::serialize(client.notifications.front());

  // The running call was all along cancellable.
  client.send_notification(k_cancel, json::object{{"id", running}});
  EXPECT_EQ(client.reply_to(running).at("error").at("code"), -32800);
  EXPECT_TRUE(cancel_received_for(extension_id));
  EXPECT_EQ(cancels().size(), 1u);
  expect_shutdown(client);
}

TEST_F(ServeCancel, ACancelledCommandCarriesTheOutputItHadSent) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  const int id = client.send_request("command.invoke", json::object{{"id", "rec"}, {"command", "partial"}});
  const json::value extension_id = wait_received("command.invoke");  // after the host took both events in
  client.send_notification(k_cancel, json::object{{"id", id}});
  const auto reply = client.reply_to(id);
  ASSERT_TRUE(reply.contains("error")) << json::serialize(reply);
  EXPECT_EQ(reply.at("error").at("code"), -32800);
  EXPECT_EQ(reply.at("error").at("message"), "request cancelled");
  const auto& data = reply.at("error").at("data").as_object();
  EXPECT_EQ(data.at("kind"), "cancelled");
  EXPECT_EQ(data.at("method"), "command.invoke");
  EXPECT_EQ(data.at("extension"), "rec");
  EXPECT_EQ(data.at("cause"), "cancelled");
  const auto& output = data.at("output").as_object();
  EXPECT_TRUE(output.at("result").is_null());
  EXPECT_EQ(json::serialize(output.at("events")),
            R"([{"kind":"text","content":"first"},{"kind":"text","content":"second"}])");
  EXPECT_EQ(output.at("counters").at("retained_events"), 2);
  EXPECT_EQ(output.at("counters").at("saw_done"), false);
  EXPECT_TRUE(output.at("notice").is_null());
  EXPECT_TRUE(cancel_received_for(extension_id));
  expect_shutdown(client);
}

TEST_F(ServeCancel, ACancelledStreamDeliversItsEventsThenRequestCancelled) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  const int id = client.send_request("provider.stream",
                                     json::object{{"id", "rec"}, {"params", {{"model", "m1"}, {"messages", json::array{}}}}});
  auto event = client.next();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->at("method"), "provider.stream.event") << json::serialize(*event);
  EXPECT_EQ(event->at("params").at("request_id"), id);
  const json::value extension_id = wait_received("provider.stream");
  client.send_notification(k_cancel, json::object{{"id", id}});
  const auto reply = client.reply_to(id);
  ASSERT_TRUE(reply.contains("error")) << json::serialize(reply);
  EXPECT_EQ(reply.at("error").at("code"), -32800);
  EXPECT_EQ(json::serialize(reply.at("error").at("data")),
            R"({"kind":"cancelled","method":"provider.stream","extension":"rec","cause":"cancelled"})");
  EXPECT_TRUE(cancel_received_for(extension_id));
  expect_shutdown(client);
}

// With every slot taken, the server still reads on a little: a cancel reaches both a
// running request and one that waits for a slot (answered at once, it never runs).
TEST_F(ServeCancel, ACancelGetsThroughWhileEverySlotIsTaken) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  std::vector<int> ids;
  for (int i = 0; i < exthost::k_max_serve_in_flight; ++i) {
    ids.push_back(client.send_request("tool.call", json::object{{"tool", "rec:wait"}}));
  }
  wait_received("tool.call");  // they run: one at the extension, the others behind it
  const int waiting = client.send_request("tool.call", json::object{{"tool", "rec:echo"}});
  client.send_notification(k_cancel, json::object{{"id", waiting}});
  const auto held = client.reply_to(waiting);
  EXPECT_EQ(held.at("error").at("code"), -32800) << json::serialize(held);
  EXPECT_EQ(held.at("error").at("data").at("extension"), "rec") << json::serialize(held);
  client.send_notification(k_cancel, json::object{{"id", ids.front()}});
  EXPECT_EQ(client.reply_to(ids.front()).at("error").at("code"), -32800);

  // The slot it freed serves the next request; the rest end with the stop.
  const auto listed = client.call("host.list", json::object{});
  EXPECT_TRUE(listed.contains("result")) << json::serialize(listed);
  const int shutdown = client.send_request("host.shutdown", json::object{});
  std::size_t stopped = 0;
  for (;;) {
    auto msg = client.next();
    ASSERT_TRUE(msg);
    if (msg->at("id") == shutdown) break;
    EXPECT_EQ(msg->at("error").at("code"), -32002) << json::serialize(*msg);
    ++stopped;
  }
  EXPECT_EQ(stopped, ids.size() - 1);
  EXPECT_EQ(client.wait_exit(), 0);
}

TEST_F(ServeCancel, AnExtensionsOwnErrorReachesTheClientWithItsCodeDataAndExtension) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  for (const char* tool : {"rec:fail", "rec_fail"}) {  // runtime and API name alike
    SCOPED_TRACE(tool);
    const auto failed = client.call("tool.call", json::object{{"tool", tool}});
    ASSERT_TRUE(failed.contains("error")) << json::serialize(failed);
    EXPECT_EQ(failed.at("error").at("code"), -32002);
    EXPECT_EQ(json::serialize(failed.at("error").at("data")),
              R"({"kind":"extension","method":"tool.call","extension":"rec","cause":"application","code":-32042,)"
              R"("data":{"reason":"on purpose","attempt":1}})");
  }
  expect_shutdown(client);
}

// The extension's data is the first thing left out of a reply that would exceed the cap;
// its code and the rest stay.
TEST_F(ServeCancel, AnExtensionsErrorDataTooBigForTheReplyIsLeftOutAndTheRestKept) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  constexpr std::int64_t cap = 4 * 1024 * 1024;
  const auto failed = client.call("tool.call", json::object{{"tool", "rec:fail"}, {"input", {{"frame_bytes", cap}}}});
  ASSERT_TRUE(failed.contains("error")) << json::serialize(failed).substr(0, 300);
  EXPECT_EQ(failed.at("error").at("code"), -32002);
  EXPECT_EQ(json::serialize(failed.at("error").at("data")),
            R"({"kind":"extension","method":"tool.call","extension":"rec","cause":"application","code":-32042})");
  expect_shutdown(client);
}

TEST_F(ServeCancel, NoExtensionIsNamedForAnUnknownToolOrExtension) {
  ServeClient client(root.path() / "home");
  ASSERT_TRUE(load(client));
  for (const char* tool : {"ghost:echo", "rec:ghost", "ghost"}) {
    SCOPED_TRACE(tool);
    const auto r = client.call("tool.call", json::object{{"tool", tool}});
    ASSERT_TRUE(r.contains("error")) << json::serialize(r);
    EXPECT_EQ(r.at("error").at("code"), -32602);
    EXPECT_EQ(r.at("error").at("data").at("kind"), "usage");
    EXPECT_TRUE(r.at("error").at("data").at("extension").is_null()) << json::serialize(r);
  }
  const auto info = client.call("info.get", json::object{{"id", "ghost"}});
  EXPECT_EQ(info.at("error").at("code"), -32602) << json::serialize(info);
  EXPECT_TRUE(info.at("error").at("data").at("extension").is_null()) << json::serialize(info);
  expect_shutdown(client);
}

// A load that fails after the manifest named the extension names it, whatever failed: here
// its handshake ran past the deadline.
TEST_F(ServeCancel, ALoadThatTimesOutNamesTheExtension) {
  ServeClient client(root.path() / "home", "0.5");
  const auto dir = write_fake_plugin(root.path(), "mute", {"hang-init"}, R"({"permissions":["tools.register"]})");
  const auto r = client.call("host.load", json::object{{"path", dir.string()}});
  ASSERT_TRUE(r.contains("error")) << json::serialize(r);
  EXPECT_NE(json::serialize(r.at("error").at("message")).find("timed out"), std::string::npos) << json::serialize(r);
  EXPECT_EQ(r.at("error").at("data").at("extension"), "mute") << json::serialize(r);
  EXPECT_EQ(r.at("error").at("data").at("method"), "host.load");
  expect_shutdown(client);
}

}  // namespace
