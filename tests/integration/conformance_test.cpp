// The conformance checker's newer checks (concurrency, pipelining, cancel-unknown,
// invalid-utf8, exit-status) against a real child: a small Python extension, written by the
// test, speaking the protocol by hand, well or broken in one way chosen by its argument.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "../support/proc.hpp"
#include "exthost/conformance.hpp"

namespace {

namespace fs = std::filesystem;

// One script, one behaviour per mode; "ok" does everything right.
constexpr const char* k_script = R"PY(
import json, os, sys

mode = sys.argv[1]
buffer = b""

def read_frame():
    global buffer
    while True:
        head, sep, rest = buffer.partition(b"\r\n\r\n")
        if sep:
            length = int(head.split(b":")[1])
            if len(rest) >= length:
                buffer = b"" if mode == "drop-pipelined" else rest[length:]
                return rest[:length]
        chunk = os.read(0, 65536)
        if not chunk:
            return None
        buffer += chunk

def send(message):
    body = json.dumps(message).encode()
    os.write(1, b"Content-Length: %d\r\n\r\n" % len(body) + body)

while True:
    body = read_frame()
    if body is None:
        sys.exit(0)
    try:
        message = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        if mode == "die-on-bad-utf8":
            raise
        message = json.loads(body.decode("utf-8", "replace"))
        reply = {"result": {}} if mode == "result-for-bad-utf8" else {"error": {"code": -32700, "message": "not UTF-8"}}
        send(dict(reply, jsonrpc="2.0", id=message["id"]))
        continue
    method = message.get("method")
    if "id" not in message:
        if method == "$/cancelRequest" and mode == "die-on-cancel":
            sys.exit(3)
        continue
    if method == "initialize":
        concurrency = {"concurrency-0": 0, "concurrency-text": "8"}.get(mode, 4)
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocol_version": 1, "capabilities": {"cancellation": True, "concurrency": concurrency}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        if mode == "flood-after-shutdown":
            chunk = b"y\n" * 32768
            while True:
                os.write(1, chunk)
        if mode == "exit-3":
            sys.exit(3)
        if mode == "abort-at-exit":
            import resource
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.abort()
        sys.exit(0)
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
)PY";

class Conformance : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("exthost-conformance-" + std::to_string(::getpid()));
    fs::create_directories(root);
    std::ofstream(root / "extension.py") << k_script;
  }
  void TearDown() override { fs::remove_all(root); }

  // The report for the script in `mode`, each wait bounded by 1 s.
  exthost::ConformanceReport run(const std::string& mode) {
    const fs::path dir = root / mode;
    fs::create_directories(dir / ".synaps-plugin");
    std::ofstream(dir / ".synaps-plugin/plugin.json")
        << R"({"extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_PYTHON
        << R"(","args":[")" << (root / "extension.py").string() << R"(",")" << mode
        << R"("],"permissions":["tools.register"]}})";
    return exthost::check_conformance(dir, std::chrono::seconds(1));
  }
  static std::map<std::string, exthost::ConformanceCheck> by_name(const exthost::ConformanceReport& r) {
    std::map<std::string, exthost::ConformanceCheck> out;
    for (const auto& c : r.checks) out.emplace(c.name, c);
    return out;
  }
  static std::set<std::string> failed(const exthost::ConformanceReport& r) {
    std::set<std::string> out;
    for (const auto& c : r.checks) {
      if (!c.passed) out.insert(c.name);
    }
    return out;
  }
  fs::path root;
};

TEST_F(Conformance, AWellBehavedExtensionPassesEveryCheckInOrder) {
  const auto report = run("ok");
  EXPECT_TRUE(report.passed()) << report.stderr_tail;
  std::vector<std::string> names;
  for (const auto& c : report.checks) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"spawn", "framing", "stdout-clean", "id-echo", "initialize-shape",
                                             "tool-specs", "concurrency", "unknown-method", "pipelining",
                                             "cancel-unknown", "invalid-utf8", "frame-cap", "shutdown",
                                             "exit-status"}));
  const auto checks = by_name(report);
  EXPECT_EQ(checks.at("concurrency").detail, "4");
  EXPECT_EQ(checks.at("pipelining").detail, "4 answered");
  EXPECT_EQ(checks.at("invalid-utf8").detail, "an error reply");
  EXPECT_EQ(checks.at("exit-status").detail, "it exited with status 0");
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(Conformance, ADeclaredConcurrencyMustBeAnIntegerFromOneToSixtyFour) {
  for (const auto& [mode, shown] : {std::pair<std::string, std::string>{"concurrency-0", "0"},
                                    std::pair<std::string, std::string>{"concurrency-text", "\"8\""}}) {
    const auto report = run(mode);
    EXPECT_EQ(failed(report), std::set<std::string>{"concurrency"}) << mode;
    EXPECT_EQ(by_name(report).at("concurrency").detail, "must be an integer from 1 to 64, got " + shown);
  }
}

TEST_F(Conformance, PipelinedRequestsThatAreLostFailPipelining) {
  const auto report = run("drop-pipelined");
  const auto checks = by_name(report);
  EXPECT_FALSE(checks.at("pipelining").passed);
  EXPECT_EQ(checks.at("pipelining").detail.rfind("no answer for id ", 0), 0u) << checks.at("pipelining").detail;
  EXPECT_TRUE(checks.at("unknown-method").passed);
}

TEST_F(Conformance, DyingOnACancellationForAnUnknownIdFailsCancelUnknown) {
  const auto report = run("die-on-cancel");
  const auto checks = by_name(report);
  EXPECT_FALSE(checks.at("cancel-unknown").passed);
  EXPECT_EQ(checks.at("cancel-unknown").detail, "no answer to the next request: the extension exited with status 3");
  EXPECT_TRUE(checks.at("pipelining").passed);
  EXPECT_EQ(checks.at("exit-status").detail, "it exited with status 3 before shutdown");
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(Conformance, DyingOnInvalidUtf8FailsInvalidUtf8) {
  const auto report = run("die-on-bad-utf8");
  const auto checks = by_name(report);
  EXPECT_FALSE(checks.at("invalid-utf8").passed);
  EXPECT_EQ(checks.at("invalid-utf8").detail, "no answer to the next request: the extension exited with status 1");
  EXPECT_NE(report.stderr_tail.find("UnicodeDecodeError"), std::string::npos) << report.stderr_tail;
  EXPECT_TRUE(checks.at("cancel-unknown").passed);
}

TEST_F(Conformance, AnsweringInvalidUtf8WithAResultFailsInvalidUtf8) {
  const auto report = run("result-for-bad-utf8");
  EXPECT_EQ(failed(report), std::set<std::string>{"invalid-utf8"});
  EXPECT_EQ(by_name(report).at("invalid-utf8").detail.rfind("answered it with a result: ", 0), 0u);
}

TEST_F(Conformance, ExitingWithAFailureOrASignalAfterShutdownFailsExitStatus) {
  for (const auto& [mode, detail] :
       {std::pair<std::string, std::string>{"exit-3", "it exited with status 3"},
        std::pair<std::string, std::string>{"abort-at-exit", "it was killed by signal 6 (SIGABRT)"}}) {
    const auto report = run(mode);
    EXPECT_EQ(failed(report), std::set<std::string>{"exit-status"}) << mode;
    EXPECT_EQ(by_name(report).at("exit-status").detail, detail);
  }
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

// The checker reads an extension's stdout: what an extension writes there endlessly must
// not grow the checker (an endless `yes` once ended in bad_alloc).
TEST_F(Conformance, AnExtensionThatWritesToStdoutEndlesslyFailsStdoutCleanInBoundedMemory) {
  const fs::path dir = root / "yes";
  fs::create_directories(dir / ".synaps-plugin");
  std::ofstream(dir / ".synaps-plugin/plugin.json")
      << R"({"extension":{"protocol_version":1,"runtime":"process","command":"yes","permissions":["tools.register"]}})";
  const bool measured = exthost::testing::k_memory_is_measurable && exthost::testing::reset_peak_rss();
  const long before = exthost::testing::rss_kib();
  const auto report = exthost::check_conformance(dir, std::chrono::seconds(3));
  const long peak = exthost::testing::status_kib(::getpid(), "VmHWM");
  const auto checks = by_name(report);
  EXPECT_FALSE(checks.at("stdout-clean").passed);
  EXPECT_EQ(checks.at("stdout-clean").detail,
            R"(more than 65536 stray bytes on stdout (not all read), starting "y\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\ny\n")");
  EXPECT_FALSE(checks.at("framing").passed);
  EXPECT_EQ(checks.at("framing").detail, "more than 65536 stray bytes on stdout; stopped reading it");
  if (measured) {
    EXPECT_LT(peak - before, 64 * 1024) << "KiB kept while reading an endless stdout";
  }
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

TEST_F(Conformance, OutputThatFloodsAfterShutdownIsNotKeptWhileTheExitIsAwaited) {
  const bool measured = exthost::testing::k_memory_is_measurable && exthost::testing::reset_peak_rss();
  const long before = exthost::testing::rss_kib();
  const auto report = run("flood-after-shutdown");
  const long peak = exthost::testing::status_kib(::getpid(), "VmHWM");
  const auto checks = by_name(report);
  EXPECT_EQ(checks.at("shutdown").detail, "answered, but still running 2 s later");
  EXPECT_FALSE(checks.at("stdout-clean").passed);
  EXPECT_EQ(checks.at("stdout-clean").detail.rfind("more than 65536 stray bytes on stdout", 0), 0u)
      << checks.at("stdout-clean").detail;
  if (measured) {
    EXPECT_LT(peak - before, 64 * 1024) << "KiB kept while waiting for the exit";
  }
  EXPECT_TRUE(exthost::testing::no_zombies_within());
}

}  // namespace
