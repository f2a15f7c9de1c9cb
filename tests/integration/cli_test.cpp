// The exthost command end to end: check and call against a real plugin directory.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include <boost/json.hpp>

#include "../support/proc.hpp"

namespace {

namespace fs = std::filesystem;

struct Run {
  int exit_code = -1;
  std::string out;
};

// Per test process: ctest runs tests in parallel.
fs::path stderr_file() { return fs::temp_directory_path() / ("exthost-cli-stderr-" + std::to_string(::getpid())); }

Run run(const std::string& args) {
  const std::string cmd = std::string(EXTHOST_CLI) + " " + args + " 2>" + stderr_file().string();
  Run r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string last_stderr() {
  std::ifstream f(stderr_file());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("exthost-cli-" + std::to_string(::getpid())) / "fake-plugin";
    fs::create_directories(dir / ".synaps-plugin");
  }
  void TearDown() override {
    fs::remove_all(dir.parent_path());
    fs::remove(stderr_file());
  }
  void manifest(const std::string& mode, const std::string& arg = "") {
    std::ofstream(dir / ".synaps-plugin/plugin.json")
        << R"({"name":"fake","extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION
        << R"(","args":[")" << mode << (arg.empty() ? "" : R"(",")" + arg)
        << R"("],"permissions":["tools.register","providers.register"]}})";
  }
  fs::path dir;
};

TEST_F(Cli, CheckReportsThePluginAsJson) {
  manifest("echo");
  auto r = run("check " + dir.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << last_stderr();
  EXPECT_EQ(r.out.rfind(R"({"id":"fake-plugin","health":"running","generation":2,"restart_count":0,"tools":[{"name":"echo","runtime_name":"fake-plugin:echo","api_name":"fake-plugin_echo","description":"Echo the input back","input_schema":{"type":"object"},"api_input_schema":{"type":"object"},"idempotent":false},)", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(R"("concurrency":1,"cancellation":false})"), std::string::npos) << r.out;
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

// What an extension declared beyond the reference (concurrency, cancellation, idempotent
// tools) is what a user checks before relying on it: shown as text and as JSON.
TEST_F(Cli, CheckShowsDeclaredConcurrencyCancellationAndIdempotentTools) {
  std::ofstream(dir / ".synaps-plugin/plugin.json")
      << R"({"name":"fake","extension":{"protocol_version":1,"runtime":"process","command":")"
      << EXTHOST_CONCURRENT_EXTENSION
      << R"(","args":["--concurrency","4","--cancellation","--state","/tmp"],"permissions":["tools.register"]}})";
  auto text = run("check " + dir.string());
  ASSERT_EQ(text.exit_code, 0) << last_stderr();
  EXPECT_NE(text.out.find("calls:      4 at once, hears $/cancelRequest\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("read_then_crash"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" (idempotent)\n"), std::string::npos) << text.out;
  auto json = run("check " + dir.string() + " --json");
  ASSERT_EQ(json.exit_code, 0) << last_stderr();
  const auto j = boost::json::parse(json.out).as_object();
  EXPECT_EQ(j.at("concurrency"), 4);
  EXPECT_EQ(j.at("cancellation"), true);
  std::size_t idempotent = 0;
  for (const auto& t : j.at("tools").as_array()) {
    if (t.at("idempotent") == true) {
      ++idempotent;
      EXPECT_EQ(t.at("name"), "read_then_crash");
    }
  }
  EXPECT_EQ(idempotent, 1u);
}

TEST_F(Cli, CallPrintsTheResultVerbatim) {
  manifest("echo");
  auto r = run("call " + dir.string() + R"( echo '{"text":"hi"}' --json)");
  ASSERT_EQ(r.exit_code, 0) << last_stderr();
  EXPECT_EQ(r.out, "{\"result\":{\"content\":{\"text\":\"hi\"}}}\n");
  auto plain = run("call " + dir.string() + R"( echo '[1,2]')");
  EXPECT_EQ(plain.out, "{\"content\":[1,2]}\n");
}

// A deadline of zero, below a millisecond, beyond a day, infinite or not a number is a
// usage error (a huge one used to overflow into an instant timeout).
TEST_F(Cli, ATimeoutOutsideItsRangeIsAUsageError) {
  manifest("echo");
  for (const char* bad : {"0", "-1", "0.0001", "86401", "1e300", "inf", "nan"}) {
    SCOPED_TRACE(bad);
    auto r = run("call " + dir.string() + " echo '{}' --timeout " + bad);
    EXPECT_EQ(r.exit_code, 2) << last_stderr();
  }
  EXPECT_EQ(run("call " + dir.string() + " echo '{}' --timeout 86400").exit_code, 0) << last_stderr();
}

TEST_F(Cli, FailuresExitNonZeroAndNameTheExtension) {
  auto missing = run("check " + dir.string());
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(last_stderr().find("Failed to read plugin manifest"), std::string::npos) << last_stderr();
  manifest("bad-protocol");
  auto bad = run("check " + dir.string());
  EXPECT_EQ(bad.exit_code, 4);
  EXPECT_NE(last_stderr().find("Extension 'fake-plugin' initialize returned unsupported protocol_version 999"),
            std::string::npos) << last_stderr();
  manifest("hang-init");
  auto slow = run("check " + dir.string() + " --timeout 0.3");
  EXPECT_EQ(slow.exit_code, 5);
  EXPECT_NE(last_stderr().find("Extension 'fake-plugin' initialize timed out"), std::string::npos) << last_stderr();
  EXPECT_EQ(run("bogus").exit_code, 2);
}

TEST_F(Cli, AResultBeyondTheDoubleRangeIsAnErrorNeverInfinity) {
  manifest("hostile", "huge-number");
  auto r = run("call " + dir.string() + " attack --json --timeout 5");
  EXPECT_EQ(r.exit_code, 4) << last_stderr();
  EXPECT_EQ(r.out, "") << "nothing on stdout, above all not Infinity";
  EXPECT_NE(last_stderr().find("Parse frame error: number out of range at byte "), std::string::npos) << last_stderr();
  EXPECT_NE(last_stderr().find(": 1e999"), std::string::npos) << last_stderr();
  EXPECT_EQ(run(R"(hook )" + dir.string() + R"( before_tool_call '{"n":1e999}')").exit_code, 2) << last_stderr();
  EXPECT_NE(last_stderr().find("EVENT_JSON holds a number out of range"), std::string::npos) << last_stderr();
}

TEST_F(Cli, HelpWorks) {
  auto r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Exit codes:"), std::string::npos);
  EXPECT_EQ(run("call --help").exit_code, 0);
}

TEST_F(Cli, TheChildAndItsDescendantsAreGoneWhenTheCommandReturns) {
  manifest("grandchild");
  auto r = run("call " + dir.string() + " echo --json");
  ASSERT_EQ(r.exit_code, 0) << last_stderr();
  const auto at = r.out.find("\"pid\":");
  ASSERT_NE(at, std::string::npos) << r.out;
  const pid_t grandchild = std::atoi(r.out.c_str() + at + 6);
  for (int i = 0; i < 300 && exthost::testing::alive(grandchild); ++i) ::usleep(10'000);
  EXPECT_FALSE(exthost::testing::alive(grandchild));
}

TEST_F(Cli, InvokeRendersTextTablesTasksAndErrorsInOrder) {
  manifest("commands");
  auto r = run("invoke " + dir.string() + " small");
  ASSERT_EQ(r.exit_code, 0) << last_stderr();
  EXPECT_EQ(r.out,
            "hello\nworking\n[task t1] Fetching (download)\n[task t1] 1/2\n[task t1] fetched shard 1\n[task t1] done\n"
            "name  size\na     1\nb     22\nerror: one minor problem\n");
}

TEST_F(Cli, InvokeJsonLinesEndWithTheNoticeAndTheResult) {
  manifest("commands");
  auto r = run("invoke " + dir.string() + " flood 5 65536 --json");
  ASSERT_EQ(r.exit_code, 0) << last_stderr();
  EXPECT_NE(r.out.find(R"({"notice":"command output limited by invocation budget: produced 327680 bytes in 6 events;)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"result\":{\"status\":\"ok\",\"emitted\":5,\"payload_bytes\":327680}}\n"), std::string::npos);
  auto unknown = run("invoke " + dir.string() + " nope");
  EXPECT_EQ(unknown.exit_code, 4);
  EXPECT_NE(last_stderr().find("Extension error: unknown command"), std::string::npos);
}

TEST_F(Cli, CompleteStreamsDeltasAndInfoPrintsTheAnswer) {
  manifest("provider", "5");
  auto streamed = run("complete " + dir.string() + R"( '{"messages":[]}' --stream)");
  ASSERT_EQ(streamed.exit_code, 0) << last_stderr();
  EXPECT_EQ(streamed.out, "0,1,2,3,4,\n");
  auto json = run("complete " + dir.string() + R"( '{"messages":[]}' --json)");
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_EQ(json.out.rfind(R"({"result":{"content":[{"type":"tool_use")", 0), 0u) << json.out;
  manifest("commands");
  auto info = run("info " + dir.string() + " --json");
  ASSERT_EQ(info.exit_code, 0);
  EXPECT_EQ(info.out.rfind(R"({"info":{"build":{"backend":"cpu")", 0), 0u) << info.out;
}

}  // namespace

namespace {

// A secret reaches the extension (the fixture records it) and nothing the host prints: not
// at debug level, not with hook tracing, not in a failure.
TEST_F(Cli, AConfiguredSecretNeverAppearsInTheCapturedLog) {
  const fs::path seen = dir.parent_path() / "seen.json";
  std::ofstream(dir / ".synaps-plugin/plugin.json")
      << R"({"extension":{"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION << R"(","args":["config-seen",")"
      << seen.string()
      << R"("],"permissions":["tools.register"],"config":[{"key":"token","secret_env":"CLI_SECRET_TOKEN","required":true}]}})";
  const std::string env = "EXTHOST_LOG=debug EXTHOST_EXTENSIONS_TRACE=1 CLI_SECRET_TOKEN=s3cr3t-never-logged ";
  auto ok = run("--version >/dev/null; " + env + EXTHOST_CLI + " call " + dir.string() +
                " exit-now --home " + (dir.parent_path() / "home").string());
  EXPECT_NE(ok.exit_code, 0);  // the tool crashes the child: the host restarts it and reports
  std::ifstream in(seen);
  const std::string delivered((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(delivered.find("s3cr3t-never-logged"), std::string::npos) << "the extension received it";
  const std::string log = last_stderr();
  EXPECT_FALSE(log.empty());
  EXPECT_EQ(log.find("s3cr3t-never-logged"), std::string::npos) << log;
  EXPECT_EQ(ok.out.find("s3cr3t-never-logged"), std::string::npos) << ok.out;
}

}  // namespace

namespace {

// The example plugins, as the source tree and the build tree hold them.
const fs::path k_examples = fs::path(EXTHOST_SOURCE_DIR) / "examples" / "plugins";
const fs::path k_built_examples = fs::path(EXTHOST_BINARY_DIR) / "examples" / "plugins";

TEST_F(Cli, HookPrintsTheGuardsVerdictAsTextAndJson) {
  const std::string guard = (k_examples / "guard").string();
  auto blocked = run("hook " + guard + R"( before_tool_call '{"tool_name":"bash","tool_input":{"command":"rm -rf /home"}}')");
  EXPECT_EQ(blocked.exit_code, 0) << last_stderr();
  EXPECT_EQ(blocked.out, "block: rm -rf outside /tmp is not allowed: rm -rf /home\n");
  auto allowed = run("hook " + guard + R"( before_tool_call '{"tool_input":{"command":"rm -rf /tmp/scratch"}}' --json)");
  EXPECT_EQ(allowed.out, "{\"result\":{\"action\":\"continue\"}}\n");
  auto bad = run("hook " + guard + " before_tool_call '[1]'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(last_stderr().find("EVENT_JSON must be a JSON object"), std::string::npos);
  EXPECT_EQ(run("hook " + guard + " on_crash").exit_code, 2);
}

TEST_F(Cli, ListHealthAndStatsCoverEveryInstalledPlugin) {
  const fs::path home = dir.parent_path() / "home";
  fs::create_directories(home / "plugins");
  fs::copy(k_examples / "echo", home / "plugins" / "echo", fs::copy_options::recursive);  // the SDK link resolved
  fs::copy(k_built_examples / "tasks", home / "plugins" / "tasks", fs::copy_options::recursive);
  fs::create_directories(home / "plugins" / "broken" / ".synaps-plugin");
  std::ofstream(home / "plugins" / "broken" / ".synaps-plugin" / "plugin.json") << "{oops";
  const std::string h = " --home " + home.string();

  auto list = run("list" + h);
  EXPECT_EQ(list.exit_code, 4) << "a plugin failed to load";
  EXPECT_NE(list.out.find("plugin  health   tools  hooks  providers\n"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("echo    running  1      0      0\n"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("tasks   running  1      0      0\n"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("failed broken: Invalid plugin manifest JSON"), std::string::npos) << list.out;
  auto list_json = run("list --json" + h);
  const auto lj = boost::json::parse(list_json.out).as_object();
  EXPECT_EQ(lj.at("extensions").as_array().size(), 2u);
  EXPECT_EQ(lj.at("failed").as_array().at(0).at("plugin"), "broken");

  auto health = run("health" + h);
  EXPECT_NE(health.out.find("echo: running (restarts 0, generation 2)\n"), std::string::npos) << health.out;
  auto health_json = run("health " + (home / "plugins" / "echo").string() + " --json" + h);
  EXPECT_EQ(health_json.exit_code, 0) << last_stderr();
  EXPECT_EQ(health_json.out,
            R"({"extensions":[{"id":"echo","health":"running","restart_count":0,"lifecycle":{"generation":2,"health":"running"}}],"failed":[]})"
            "\n");

  auto stats = run("stats " + (home / "plugins" / "echo").string() + h);
  EXPECT_NE(stats.out.find("echo  running\n  frames   in "), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find("restarts 0, generation 2"), std::string::npos) << stats.out;
  auto stats_json = run("stats " + (home / "plugins" / "echo").string() + " --json" + h);
  const auto sj = boost::json::parse(stats_json.out).as_object();
  EXPECT_EQ(sj.at("extensions").as_array().at(0).at("id"), "echo");
  EXPECT_GE(sj.at("extensions").as_array().at(0).at("stats").at("frames_in").as_int64(), 1);
}

TEST_F(Cli, InvokeShowsTasksAndATableFromTheCppExample) {
  auto r = run("invoke " + (k_built_examples / "tasks").string() + " report " + (k_examples / "echo").string());
  EXPECT_EQ(r.exit_code, 0) << last_stderr();
  EXPECT_NE(r.out.find("[task scan] Scanning echo (generic)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[task scan] done\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nfile "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nextension.py "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "no colour when stdout is not a terminal";
}

TEST_F(Cli, ExamplesRunThroughTheirSdks) {
  const fs::path home = dir.parent_path() / "home";
  const std::string h = " --home " + home.string();
  const std::string notes = (k_examples / "notes").string();
  EXPECT_EQ(run("call " + notes + R"( add_note '{"text":"buy milk","tag":"errand"}')" + h).exit_code, 0) << last_stderr();
  auto found = run("call " + notes + R"( find_notes '{"text":"MILK"}' --json)" + h);
  EXPECT_EQ(found.out, "{\"result\":{\"content\":\"buy milk\",\"count\":1}}\n") << last_stderr();
  auto streamed = run("complete " + (k_examples / "mockllm").string() + R"( '{"model":"mock-1","messages":[]}' --stream)");
  EXPECT_EQ(streamed.out, "Hello from a mock model that streams word by word.\n");
  auto asked = run("complete " + (k_examples / "mockllm").string() + R"( '{"model":"mock-1","messages":[]}' --json)");
  EXPECT_NE(asked.out.find(R"("type":"tool_use","id":"toolu_1","name":"echo")"), std::string::npos) << asked.out;
  EXPECT_EQ(run("call " + (k_examples / "echo").string() + R"( echo '{"text":"hi"}')").out, "{\"content\":\"echo: hi\"}\n");
}

TEST_F(Cli, CheckAndInfoDescribeTheExamplesAsTextAndJson) {
  auto text = run("check " + (k_examples / "mockllm").string());
  EXPECT_EQ(text.exit_code, 0) << last_stderr();
  EXPECT_EQ(text.out.rfind("plugin:     mockllm\nhealth:     running\ngeneration: 2\ninitialize: ", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("tools:      0\nprovider:   mockllm:mock (1 models)\n"), std::string::npos) << text.out;
  auto json = run("check " + (k_examples / "guard").string() + " --json");
  const auto j = boost::json::parse(json.out).as_object();
  EXPECT_EQ(boost::json::serialize(j.at("hooks")), R"([{"kind":"before_tool_call","tool":null}])");
  EXPECT_TRUE(j.at("init_us").is_number());
  auto info = run("info " + (k_examples / "mockllm").string() + " --json");
  EXPECT_EQ(info.out,
            R"({"info":{"build":{"backend":"none","features":["streaming","tool_use"],"version":"1.0.0"},"capabilities":[],"models":[{"id":"mock-1","installed":true,"display_name":"Mock 1"}]}})"
            "\n");
  auto plain = run("info " + (k_examples / "mockllm").string());
  EXPECT_EQ(plain.out.rfind(R"({"build":{"backend":"none")", 0), 0u) << plain.out;
  auto no_info = run("info " + (k_examples / "echo").string());
  EXPECT_EQ(no_info.exit_code, 4);
  EXPECT_NE(last_stderr().find("extension 'echo' info.get: Extension error: method not found: info.get"),
            std::string::npos)
      << last_stderr();
}

TEST_F(Cli, InvokeJsonLinesFromTheCppExample) {
  auto r = run("invoke " + (k_built_examples / "tasks").string() + " report " + (k_examples / "echo").string() + " --json");
  EXPECT_EQ(r.exit_code, 0) << last_stderr();
  EXPECT_EQ(r.out.rfind(R"({"event":{"kind":"system","content":"Scanning )", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(R"({"event":{"method":"task.start","id":"scan",)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"result\":{\"status\":\"ok\",\"files\":"), std::string::npos) << r.out;
}

TEST_F(Cli, AFailedCallNamesTheExtensionAndTheMethod) {
  manifest("echo");
  auto r = run("call " + dir.string() + " exit-now");
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(last_stderr().find("exthost: error: extension 'fake-plugin' tool.call: transport closed"), std::string::npos)
      << last_stderr();
}

TEST_F(Cli, ConformancePassesEveryCheckForTheExamples) {
  for (const fs::path& p : {k_examples / "echo", k_examples / "guard", k_examples / "notes", k_examples / "mockllm",
                           k_built_examples / "tasks", k_built_examples / "wordcount"}) {
    auto r = run("conformance " + p.string());
    EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.out;
    EXPECT_NE(r.out.find("14 of 14 checks passed\n"), std::string::npos) << r.out;
  }
  auto json = run("conformance " + (k_examples / "echo").string() + " --json");
  const auto j = boost::json::parse(json.out).as_object();
  EXPECT_EQ(j.at("passed"), true);
  EXPECT_EQ(j.at("checks").as_array().size(), 14u);
}

// Each broken fixture is caught by the check named for what it breaks.
TEST_F(Cli, ConformanceNamesEachBrokenBehaviour) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"stray", "stdout-clean"},       {"wrong-id", "id-echo"},        {"bad-tools", "tool-specs"},
      {"huge-frame", "frame-cap"},     {"bad-protocol", "initialize-shape"}, {"ignore-sigterm", "shutdown"},
      {"hang-init", "framing"},        {"unknown-method", "shutdown"}};
  for (const auto& [mode, failing] : cases) {
    manifest(mode);
    auto r = run("conformance " + dir.string() + " --json --timeout 1");
    EXPECT_EQ(r.exit_code, 4) << mode;
    const auto j = boost::json::parse(r.out).as_object();
    EXPECT_EQ(j.at("passed"), false) << mode;
    bool found = false;
    for (const auto& c : j.at("checks").as_array()) {
      if (c.at("name").as_string() == failing) {
        found = true;
        EXPECT_EQ(c.at("passed"), false) << mode << " should fail " << failing << ": " << r.out;
        EXPECT_FALSE(c.at("detail").as_string().empty()) << mode;
      }
    }
    EXPECT_TRUE(found) << failing;
  }
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(Cli, LimitSetsTheMostAnExtensionMayUseAndItsReportNamesTheLimit) {
  manifest("limits");
  auto shown = run("check " + dir.string() + " --limit cpu_seconds=30 --limit open_files=64");
  ASSERT_EQ(shown.exit_code, 0) << last_stderr();
  EXPECT_NE(shown.out.find("limits:     open files 64, CPU 30 s"), std::string::npos) << shown.out;
  auto r = run("call " + dir.string() + " burn-cpu --limit cpu_seconds=1");
  EXPECT_EQ(r.exit_code, 4);
  const std::string err = last_stderr();
  EXPECT_NE(err.find("SIGXCPU"), std::string::npos) << err;
  EXPECT_NE(err.find("CPU-time limit of 1 s"), std::string::npos) << err;
  EXPECT_NE(err.find("burn-cpu: spinning until a signal ends it"), std::string::npos) << "the stderr tail: " << err;
  auto bad = run("call " + dir.string() + " echo --limit cpu=1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(last_stderr().find("--limit expects KEY=VALUE"), std::string::npos) << last_stderr();
}

}  // namespace
