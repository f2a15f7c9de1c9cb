// The extension manager end to end through the public API (SPEC §8.15, §8.21, §8.22):
// configuration, secrets, tools, hooks, discovery, reload.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>

#include "../support/plugin_dir.hpp"
#include "../support/proc.hpp"
#include "exthost/host.hpp"

namespace {

namespace fs = std::filesystem;
using exthost::testing::read_text;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

class ManagerTest : public ::testing::Test {
 protected:
  exthost::HostOptions options() {
    exthost::HostOptions o;
    o.home = home();
    o.project_dir = root.path() / "project";
    o.env = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env.find(name);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    return o;
  }
  fs::path home() const { return root.path() / "home"; }
  fs::path plugins() const { return home() / "plugins"; }
  fs::path project_plugins() const { return root.path() / "project" / ".exthost" / "plugins"; }
  std::map<std::string, std::string> env;
  TempRoot root{"manager"};
};

constexpr const char* k_config_entries = R"({"permissions":["tools.register"],"config":[
  {"key":"endpoint","required":true},
  {"key":"mode","default":"safe"},
  {"key":"token","secret_env":"CONFIG_TEST_TOKEN"}]})";

TEST_F(ManagerTest, ConfigIsResolvedAndPassedToInitialize) {
  const auto seen = root.path() / "config-seen.json";
  const auto dir = write_fake_plugin(root.path(), "config-seen-ext", {"config-seen", seen.string()}, k_config_entries);
  fs::create_directories(home());
  std::ofstream(home() / "config") << "extension.config-seen-ext.endpoint = http://legacy\n";
  fs::create_directories(plugins() / "config-seen-ext");
  std::ofstream(plugins() / "config-seen-ext" / "config") << "endpoint = http://plugin\n";
  env["CONFIG_TEST_TOKEN"] = "sk-secret-value-1234";
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(read_text(seen), R"({"endpoint":"http://plugin","mode":"safe","token":"sk-secret-value-1234"})" "\n");
  auto report = host.config_report("config-seen-ext");
  ASSERT_TRUE(report);
  EXPECT_NE(report->find(R"("key":"token","description":null,"required":false,"source":"secret_env","source_detail":"CONFIG_TEST_TOKEN","has_value":true,"value":"***1234")"),
            std::string::npos)
      << *report;
  EXPECT_EQ(report->find("sk-secret"), std::string::npos);
}

TEST_F(ManagerTest, AMissingRequiredConfigFailsBeforeSpawn) {
  const auto dir = write_fake_plugin(root.path(), "needs-endpoint", {}, k_config_entries, "/definitely/not/spawned");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().kind, exthost::ErrorKind::manifest);
  EXPECT_EQ(info.error().message,
            "Extension 'needs-endpoint' missing required config 'endpoint': set config key "
            "'extension.needs-endpoint.endpoint'");
}

TEST_F(ManagerTest, ADeclaredSecretSurvivesARestartWithoutPersistence) {
  const auto seen = root.path() / "config-seen.json";
  const auto dir = write_fake_plugin(root.path(), "secret-ext", {"config-seen", seen.string()}, k_config_entries);
  env["EXTHOST_EXTENSION_SECRET_EXT_ENDPOINT"] = "http://env";
  env["CONFIG_TEST_TOKEN"] = "tok-only-in-memory-42";
  exthost::Host host(options());
  ASSERT_TRUE(host.load(dir));
  fs::remove(seen);
  EXPECT_FALSE(host.call_tool("secret-ext", "exit-now", "{}")) << "the crash fails this call once";
  ASSERT_TRUE(host.call_tool("secret-ext", "echo", "{}"));  // restarted: initialize again
  EXPECT_EQ(read_text(seen), R"({"endpoint":"http://env","mode":"safe","token":"tok-only-in-memory-42"})" "\n");
  EXPECT_GE(host.stats("secret-ext")->restarts, 1u);
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(home(), ec)) {
    if (e.is_regular_file()) {
      EXPECT_EQ(read_text(e.path()).find("tok-only-in-memory-42"), std::string::npos) << e.path();
    }
  }
}

TEST_F(ManagerTest, ToolsAreRegisteredByRuntimeAndApiNameAndRun) {
  const auto dir = write_fake_plugin(root.path(), "register-tool-test", {"echo"});
  exthost::Host host(options());
  ASSERT_TRUE(host.load(dir));
  auto tools = host.tools();
  ASSERT_FALSE(tools.empty());
  EXPECT_EQ(tools[0].runtime_name, "register-tool-test:echo");
  EXPECT_EQ(tools[0].api_name, "register-tool-test_echo");
  EXPECT_EQ(*host.call_named_tool("register-tool-test:echo", R"({"text":"hello"})"), R"({"content":{"text":"hello"}})");
  EXPECT_EQ(*host.call_named_tool("register-tool-test_echo", "[1]"), R"({"content":[1]})");
  auto unknown = host.call_named_tool("register-tool-test:nope", "{}");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown tool 'register-tool-test:nope'");
}

TEST_F(ManagerTest, RegisteringToolsRequiresToolsRegisterAndTheChildDoesNotLeak) {
  const auto dir = write_fake_plugin(root.path(), "no-register", {"echo"}, R"({"permissions":["memory.read"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().message, "Extension 'no-register' registered tools but lacks permission 'tools.register'");
  EXPECT_TRUE(exthost::testing::no_zombies_within());
  EXPECT_TRUE(host.list().empty());
}

TEST_F(ManagerTest, ABadManifestIsRejectedBeforeSpawning) {
  const auto dir = write_fake_plugin(root.path(), "typo", {"echo"}, R"({"permissions":["tools.register","tools.typo"]})",
                                     "/definitely/not/spawned");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().message, "Unknown extension permission: tools.typo");
}

// A guard that blocks, a rewriter that modifies, a recorder that sees what ran.
TEST_F(ManagerTest, ModifyRewritesTheInputAndTheAfterHookSeesWhatRan) {
  const auto log = root.path() / "after.jsonl";
  write_fake_plugin(plugins(), "a-modify", {"hook", R"({"action":"modify","input":{"text":"modified"}})"},
                    R"({"permissions":["tools.intercept"],"hooks":[{"hook":"before_tool_call","tool":"tools:echo"}]})");
  write_fake_plugin(plugins(), "b-record", {"hook", R"({"action":"continue"})", log.string()},
                    R"({"permissions":["tools.intercept"],"hooks":[{"hook":"after_tool_call"}]})");
  write_fake_plugin(plugins(), "tools", {"echo"});
  exthost::Host host(options());
  auto report = host.discover();
  ASSERT_EQ(report.loaded, (std::vector<std::string>{"a-modify", "b-record", "tools"}));
  auto r = host.call_named_tool("tools:echo", R"({"text":"original"})", exthost::ToolCallContext{"sess-A", std::nullopt});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, R"({"content":{"text":"modified"}})");
  const auto seen = boost::json::parse(read_text(log)).as_object();
  EXPECT_EQ(seen.at("kind"), "after_tool_call");
  EXPECT_EQ(seen.at("tool_name"), "tools_echo");
  EXPECT_EQ(seen.at("tool_runtime_name"), "tools:echo");
  EXPECT_EQ(boost::json::serialize(seen.at("tool_input")), R"({"text":"modified"})");
  EXPECT_EQ(seen.at("tool_output"), R"({"content":{"text":"modified"}})");
  EXPECT_EQ(seen.at("session_id"), "sess-A");
}

TEST_F(ManagerTest, ABlockingHookStopsTheToolAndMatchersChooseWhenItFires) {
  write_fake_plugin(plugins(), "guard", {"hook", R"({"action":"block","reason":"rm -rf is not allowed"})"},
                    R"({"permissions":["tools.intercept"],
                        "hooks":[{"hook":"before_tool_call","match":{"input_contains":"rm -rf"}}]})");
  write_fake_plugin(plugins(), "tools", {"echo"});
  exthost::Host host(options());
  host.discover();
  auto blocked = host.call_named_tool("tools:echo", R"({"command":"rm -rf /"})");
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().message, "Tool 'tools:echo' blocked by hook: rm -rf is not allowed (extension 'guard')");
  EXPECT_EQ(blocked.error().cause, exthost::ErrorCause::blocked);
  EXPECT_EQ(blocked.error().extension_id, "guard");
  EXPECT_TRUE(host.call_named_tool("tools:echo", R"({"command":"ls"})"));
  auto hook = host.emit_hook(R"({"kind":"before_tool_call","tool_name":"bash","tool_input":{"command":"rm -rf /tmp/x"}})");
  EXPECT_EQ(*hook, R"({"action":"block","reason":"rm -rf is not allowed"})");
}

TEST_F(ManagerTest, ReplaceSubstitutesTheOutputOnlyWithTransformPermission) {
  write_fake_plugin(plugins(), "crusher", {"replace"},
                    R"({"permissions":["tools.register","tools.intercept","tools.transform_output"],"hooks":[{"hook":"after_tool_call"}]})");
  write_fake_plugin(plugins(), "tools", {"echo"});
  exthost::Host host(options());
  host.discover();
  EXPECT_EQ(*host.call_named_tool("tools:echo", "{}"), R"("CRUSHED")");
  ASSERT_TRUE(host.reload("crusher"));
  EXPECT_EQ(host.list().size(), 2u);
  EXPECT_EQ(*host.call_named_tool("tools:echo", "{}"), R"("CRUSHED")") << "reload keeps exactly one subscription";
  ASSERT_TRUE(host.unload("crusher"));
  write_fake_plugin(plugins(), "crusher", {"replace"},
                    R"({"permissions":["tools.register","tools.intercept"],"hooks":[{"hook":"after_tool_call"}]})");
  ASSERT_TRUE(host.load(plugins() / "crusher"));
  EXPECT_EQ(*host.call_named_tool("tools:echo", "{}"), R"({"content":{}})");
}

TEST_F(ManagerTest, ConfirmBlocksAHeadlessHostUnlessConfirmationsAreApproved) {
  write_fake_plugin(plugins(), "asker", {"hook", R"({"action":"confirm","message":"Run this command?"})"},
                    R"({"permissions":["tools.intercept"],"hooks":[{"hook":"before_tool_call"}]})");
  write_fake_plugin(plugins(), "tools", {"echo"});
  {
    exthost::Host host(options());
    host.discover();
    auto r = host.call_named_tool("tools:echo", "{}");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message,
              "Tool 'tools:echo' blocked by hook: Tool call requires confirmation but no interactive prompt is "
              "available: Run this command? (extension 'asker')");
  }
  auto approving = options();
  approving.auto_approve_confirmations = true;
  exthost::Host host(approving);
  host.discover();
  EXPECT_TRUE(host.call_named_tool("tools:echo", "{}"));
}

TEST_F(ManagerTest, SessionEndReachesEverySubscriberAtOnce) {
  const auto a = root.path() / "a.jsonl", b = root.path() / "b.jsonl";
  write_fake_plugin(plugins(), "a", {"hook", R"({"action":"continue"})", a.string()},
                    R"({"permissions":["session.lifecycle"],"hooks":[{"hook":"on_session_end"}]})");
  write_fake_plugin(plugins(), "b", {"hook", R"({"action":"block","reason":"ignored"})", b.string()},
                    R"({"permissions":["session.lifecycle"],"hooks":[{"hook":"on_session_end"}]})");
  exthost::Host host(options());
  host.discover();
  EXPECT_EQ(*host.emit_hook(R"({"kind":"on_session_end","session_id":"sess-1"})"), R"({"action":"continue"})");
  EXPECT_NE(read_text(a).find(R"("session_id":"sess-1")"), std::string::npos);
  EXPECT_NE(read_text(b).find(R"("kind":"on_session_end")"), std::string::npos);
  auto bad = host.emit_hook(R"({"kind":"on_crash"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "invalid hook event: unknown kind 'on_crash' at event.kind");
}

TEST_F(ManagerTest, DiscoveryReportsFailuresWithManifestPathReasonAndHint) {
  write_fake_plugin(plugins(), "good", {"echo"});
  fs::create_directories(plugins() / "bad-json" / ".synaps-plugin");
  std::ofstream(plugins() / "bad-json" / ".synaps-plugin" / "plugin.json") << "{not json";
  fs::create_directories(plugins() / "bad-shape" / ".synaps-plugin");
  std::ofstream(plugins() / "bad-shape" / ".synaps-plugin" / "plugin.json") << R"({"extension":{"runtime":"process","command":7}})";
  write_fake_plugin(plugins(), "missing-binary", {}, R"({"permissions":["tools.register"],"setup":"scripts/setup.sh"})",
                    "/definitely/not/installed");
  fs::create_directories(plugins() / "no-manifest");
  std::vector<exthost::DiscoveryEvent::Kind> kinds;
  exthost::Host host(options());
  auto report = host.discover([&](const exthost::DiscoveryEvent& e) { kinds.push_back(e.kind); });
  EXPECT_EQ(report.loaded, std::vector<std::string>{"good"});
  ASSERT_EQ(report.failed.size(), 3u);
  const auto& json = report.failed[0];
  EXPECT_EQ(json.plugin, "bad-json");
  EXPECT_EQ(json.manifest_path, plugins() / "bad-json" / ".synaps-plugin" / "plugin.json");
  EXPECT_EQ(json.reason.rfind("Invalid plugin manifest JSON", 0), 0u) << json.reason;
  EXPECT_EQ(json.hint, "Fix JSON syntax, then run `exthost check <plugin-dir>`");
  EXPECT_NE(json.concise_message().find("(manifest: "), std::string::npos);
  EXPECT_EQ(report.failed[1].reason.rfind("Failed to parse extension manifest", 0), 0u) << report.failed[1].reason;
  const auto& missing = report.failed[2];
  EXPECT_EQ(missing.reason.rfind("Failed to spawn extension 'missing-binary'", 0), 0u) << missing.reason;
  EXPECT_EQ(missing.hint.rfind("Extension binary missing — this plugin ships source only.", 0), 0u) << missing.hint;
  EXPECT_NE(missing.hint.find("setup=scripts/setup.sh"), std::string::npos);
  EXPECT_EQ(kinds.front(), exthost::DiscoveryEvent::Kind::started);
  EXPECT_EQ(kinds.back(), exthost::DiscoveryEvent::Kind::finished);
  EXPECT_EQ(kinds.size(), 6u);
}

TEST_F(ManagerTest, ProjectPluginsOverrideHomePluginsAndCanBeDisabled) {
  const auto home_seen = root.path() / "home-seen.json", project_seen = root.path() / "project-seen.json";
  write_fake_plugin(plugins(), "same", {"config-seen", home_seen.string()});
  write_fake_plugin(project_plugins(), "same", {"config-seen", project_seen.string()});
  {
    exthost::Host host(options());
    EXPECT_EQ(host.discover().loaded, std::vector<std::string>{"same"});
    EXPECT_TRUE(fs::exists(project_seen));
    EXPECT_FALSE(fs::exists(home_seen));
  }
  fs::remove(project_seen);
  env["EXTHOST_DISABLE_PROJECT_PLUGINS"] = "yes";
  exthost::Host host(options());
  host.discover();
  EXPECT_TRUE(fs::exists(home_seen));
  EXPECT_FALSE(fs::exists(project_seen));
}

TEST_F(ManagerTest, DiscoveryIsIdempotentUntilShutdownAllAndHonoursDisabledPlugins) {
  write_fake_plugin(plugins(), "one", {"echo"});
  write_fake_plugin(plugins(), "off", {"echo"});
  fs::create_directories(home());
  std::ofstream(home() / "config") << "disabled_plugins = off, other\n";
  exthost::Host host(options());
  EXPECT_EQ(host.discover().loaded, std::vector<std::string>{"one"});
  const auto pid = host.child_pid("one");
  EXPECT_EQ(host.discover().loaded, std::vector<std::string>{"one"});
  EXPECT_EQ(host.child_pid("one"), pid) << "a replay spawns nothing";
  host.shutdown_all();
  EXPECT_TRUE(host.list().empty());
  EXPECT_FALSE(exthost::testing::alive(*pid));
  EXPECT_EQ(host.discover().loaded, std::vector<std::string>{"one"});
  EXPECT_NE(host.child_pid("one"), pid);
}

TEST_F(ManagerTest, AFailedReloadLeavesTheExtensionUnloaded) {
  const auto dir = write_fake_plugin(plugins(), "flaky", {"echo"});
  exthost::Host host(options());
  ASSERT_TRUE(host.load(dir));
  write_fake_plugin(plugins(), "flaky", {"echo"}, R"({"permissions":["tools.register"]})", "/definitely/not/spawned");
  auto again = host.reload("flaky");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message.rfind("Failed to spawn extension 'flaky'", 0), 0u) << again.error().message;
  EXPECT_TRUE(host.list().empty());
  EXPECT_EQ(host.unload("flaky").error().message, "Extension 'flaky' not found");
}

TEST_F(ManagerTest, AProviderRequiringConfigNobodySuppliesFailsTheLoadAndStopsTheChild) {
  const auto dir = write_fake_plugin(root.path(), "prov", {"provider", "1", "needs-config"},
                                     R"({"permissions":["tools.register","providers.register"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_FALSE(info);
  EXPECT_EQ(info.error().message, "Extension 'prov' provider 'mock' missing required provider config 'api_key'");
  EXPECT_TRUE(host.list().empty());
  EXPECT_TRUE(exthost::testing::no_zombies_within());
  write_fake_plugin(root.path(), "prov", {"provider", "1", "needs-config"},
                    R"({"permissions":["tools.register","providers.register"],"config":[{"key":"api_key","secret_env":"PROV_KEY"}]})");
  env["PROV_KEY"] = "k-123456789";
  auto loaded = host.load(dir);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->providers.size(), 1u);
  EXPECT_EQ(loaded->providers[0].id, "prov:mock");
  EXPECT_NE(host.config_report("prov")->find(R"("provider_missing":[])"), std::string::npos);
  env.erase("PROV_KEY");  // gone since the load: the report says which provider lacks what
  EXPECT_NE(host.config_report("prov")->find(R"("provider_missing":[{"provider":"prov:mock","key":"api_key"}])"),
            std::string::npos)
      << *host.config_report("prov");
}

TEST_F(ManagerTest, StatsCountFramesCallsAndRestarts) {
  const auto dir = write_fake_plugin(root.path(), "counted", {"echo"});
  exthost::Host host(options());
  ASSERT_TRUE(host.load(dir));
  ASSERT_TRUE(host.call_tool("counted", "echo", "{}"));
  ASSERT_TRUE(host.call_tool("counted", "echo", "{}"));
  auto s = host.stats("counted");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->calls_ok, 2u);
  EXPECT_EQ(s->calls_application_error, 1u);  // the load's info.get probe: "unknown method"
  EXPECT_EQ(s->frames_out, 4u);  // initialize, the probe, two calls
  EXPECT_EQ(s->frames_in, 4u);
  EXPECT_GT(s->bytes_in, 0u);
  EXPECT_EQ(s->restarts, 0u);
  EXPECT_EQ(s->health, exthost::Health::running);
  EXPECT_EQ(s->generation, 2u);
  EXPECT_FALSE(host.stats("nobody"));
}

}  // namespace

namespace {

TEST_F(ManagerTest, ShutdownAllKillsWhatIsStillStoppingAtItsBound) {
  // Each stop ladder would wait 30 s after SIGTERM for an extension that ignores it; the
  // overall bound (k_shutdown_all_bound, 10 s) kills it instead.
  auto o = options();
  o.shutdown_grace = std::chrono::seconds(30);
  o.shutdown_request_timeout = std::chrono::milliseconds(200);
  exthost::Host host(o);
  ASSERT_TRUE(host.load(write_fake_plugin(root.path(), "stubborn", {"ignore-sigterm"})));
  ASSERT_TRUE(host.load(write_fake_plugin(root.path(), "polite", {"echo"})));
  const auto stubborn = host.child_pid("stubborn");
  const auto polite = host.child_pid("polite");
  ASSERT_TRUE(stubborn && polite);
  const auto started = std::chrono::steady_clock::now();
  host.shutdown_all();
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, std::chrono::seconds(25)) << "the bound, not the 30 s grace, ended the wait";
  for (int i = 0; i < 500 && exthost::testing::alive(*stubborn); ++i) ::usleep(10'000);
  EXPECT_FALSE(exthost::testing::alive(*stubborn)) << "killed at the bound";
  EXPECT_FALSE(exthost::testing::alive(*polite));
  EXPECT_TRUE(host.list().empty());
}

}  // namespace
