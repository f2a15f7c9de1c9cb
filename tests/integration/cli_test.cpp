// The exthost command end to end: check and call against a real plugin directory.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

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
  EXPECT_EQ(r.out.rfind(R"({"id":"fake-plugin","health":"running","generation":2,"restart_count":0,"tools":[{"name":"echo","runtime_name":"fake-plugin:echo","api_name":"fake-plugin_echo","description":"Echo the input back","input_schema":{"type":"object"},"api_input_schema":{"type":"object"}},)", 0), 0u) << r.out;
  EXPECT_EQ(exthost::testing::zombie_children(), 0);
}

TEST_F(Cli, CallPrintsTheResultVerbatim) {
  manifest("echo");
  auto r = run("call " + dir.string() + R"( echo '{"text":"hi"}' --json)");
  ASSERT_EQ(r.exit_code, 0) << last_stderr();
  EXPECT_EQ(r.out, "{\"result\":{\"content\":{\"text\":\"hi\"}}}\n");
  auto plain = run("call " + dir.string() + R"( echo '[1,2]')");
  EXPECT_EQ(plain.out, "{\"content\":[1,2]}\n");
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
