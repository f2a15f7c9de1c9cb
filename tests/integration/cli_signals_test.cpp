// The exthost command under SIGINT, SIGTERM and SIGHUP: every verb stops its extensions
// (the full ladder, or at once on a second signal), exits with 128 + the signal and leaves
// its output with whole lines. Real children, every wait bounded.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../support/proc.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long the fixture may take to reach its stall, and the command to end after a signal
// (the stop stays within 10 s; the ladder itself takes about 1.5 s).
constexpr auto k_ready_bound = 10s;
constexpr auto k_exit_bound = 10s;
// How long a process may linger after the command returned (reaped by init meanwhile).
constexpr auto k_gone_bound = 2s;

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds bound) {
  const auto deadline = Clock::now() + bound;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

bool gone_soon(pid_t pid) {
  return wait_until([pid] { return !exthost::testing::alive(pid); }, k_gone_bound);
}

// A running `exthost` with its stdout and stderr in files.
class Command {
 public:
  // `stdin_fd`: the command's input (-1: /dev/null).
  Command(const std::vector<std::string>& args, const fs::path& out, const fs::path& err, int stdin_fd = -1)
      : m_out(out), m_err(err) {
    std::vector<std::string> all{EXTHOST_CLI};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int in = stdin_fd >= 0 ? stdin_fd : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    m_pid = ::fork();
    if (m_pid == 0) {
      ::dup2(in, 0);
      ::dup2(o, 1);
      ::dup2(e, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (stdin_fd < 0) ::close(in);
    ::close(o);
    ::close(e);
  }
  ~Command() {
    if (!m_status) {
      ::kill(m_pid, SIGKILL);
      ::waitpid(m_pid, nullptr, 0);
    }
  }

  void signal(int signo) const { ::kill(m_pid, signo); }

  // The wait status once it ended within `bound`; nullopt if it did not (it is then killed).
  std::optional<int> wait(std::chrono::milliseconds bound) {
    const auto deadline = Clock::now() + bound;
    for (;;) {
      int status = 0;
      if (::waitpid(m_pid, &status, WNOHANG) == m_pid) return m_status = status;
      if (Clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(5ms);
    }
  }

  std::string out() const { return read_file(m_out); }
  std::string err() const { return read_file(m_err); }

 private:
  pid_t m_pid = -1;
  fs::path m_out, m_err;
  std::optional<int> m_status;
};

// "exited with 130", "killed by signal 2": what a wait status says.
std::string describe(const std::optional<int>& status) {
  if (!status) return "still running";
  if (WIFEXITED(*status)) return "exited with " + std::to_string(WEXITSTATUS(*status));
  if (WIFSIGNALED(*status)) return "killed by signal " + std::to_string(WTERMSIG(*status));
  return "status " + std::to_string(*status);
}
std::string exited_with(int code) { return "exited with " + std::to_string(code); }

// What the stall fixture recorded: the extension, a process in its group, a daemon.
struct Stalled {
  pid_t pid = -1, child = -1, daemon = -1;
};

class CliSignals : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("exthost-cli-signals-" + std::to_string(::getpid()));
    dir = root / "stall-plugin";
    fs::create_directories(dir / ".synaps-plugin");
    pids_file = root / "pids.json";
  }
  void TearDown() override {
    // Whatever the assertions said, nothing of the fixture outlives the test.
    for (pid_t p : {stalled.pid, stalled.child, stalled.daemon}) {
      if (p > 0) ::kill(p, SIGKILL);
    }
    fs::remove_all(root);
  }

  // The stall fixture; `hook`: subscribed to before_tool_call as well.
  void manifest(const std::string& option = "", bool hook = false) {
    std::ofstream(dir / ".synaps-plugin/plugin.json")
        << R"({"extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION
        << R"(","args":["stall",")" << pids_file.string() << (option.empty() ? "" : R"(",")" + option)
        << R"("],"permissions":["tools.register","providers.register","tools.intercept"])"
        << (hook ? R"(,"hooks":[{"hook":"before_tool_call"}])" : "") << "}}";
  }

  // Whether a control group holds the extension's daemons on this machine (else only its
  // process group is contained, and a daemon in a session of its own survives by design).
  bool contained() {
    manifest();
    Command check({"check", dir.string(), "--json", "--home", (root / "home").string()}, root / "check.out",
                  root / "check.err");
    if (describe(check.wait(k_exit_bound)) != exited_with(0)) return false;
    const auto info = boost::json::parse(read_file(root / "check.out")).as_object();
    return info.at("contained_by_cgroup").as_bool();
  }

  // Waits for the fixture to stall and reads what it recorded.
  bool stalled_now() {
    if (!wait_until([&] { return fs::exists(pids_file); }, k_ready_bound)) return false;
    const auto v = boost::json::parse(read_file(pids_file)).as_object();
    stalled.pid = static_cast<pid_t>(v.at("pid").as_int64());
    stalled.child = static_cast<pid_t>(v.at("child").as_int64());
    stalled.daemon = static_cast<pid_t>(v.at("daemon").as_int64());
    return true;
  }

  std::vector<std::string> args(std::vector<std::string> a) {
    a.push_back("--home");
    a.push_back((root / "home").string());
    return a;
  }

  fs::path root, dir, pids_file;
  Stalled stalled;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST_F(CliSignals, EachStopSignalEndsACallAndEveryProcessOfItsExtension) {
  const bool daemons_contained = contained();
  struct Case {
    int signo;
    const char* name;
    int code;
  };
  for (const Case c : {Case{SIGINT, "SIGINT", 130}, Case{SIGTERM, "SIGTERM", 143}, Case{SIGHUP, "SIGHUP", 129}}) {
    SCOPED_TRACE(c.name);
    fs::remove(pids_file);
    manifest();
    Command call(args({"call", dir.string(), "echo"}), root / "out", root / "err");
    ASSERT_TRUE(stalled_now()) << call.err();
    const auto sent = Clock::now();
    call.signal(c.signo);
    const auto status = call.wait(k_exit_bound);
    EXPECT_LT(Clock::now() - sent, k_exit_bound);
    EXPECT_EQ(describe(status), exited_with(c.code)) << call.err();
    const std::string err = call.err();
    EXPECT_TRUE(ends_with(err, std::string("exthost: interrupted (") + c.name + "); every extension stopped\n")) << err;
    EXPECT_EQ(err.find("tool.call"), std::string::npos) << "the cancelled call is not reported as a failure: " << err;
    EXPECT_EQ(call.out(), "");
    EXPECT_TRUE(gone_soon(stalled.pid)) << "extension " << stalled.pid;
    EXPECT_TRUE(gone_soon(stalled.child)) << "process " << stalled.child << " of its group";
    if (daemons_contained) {
      EXPECT_TRUE(gone_soon(stalled.daemon)) << "daemon " << stalled.daemon;
    }
    for (pid_t p : {stalled.pid, stalled.child, stalled.daemon}) ::kill(p, SIGKILL);
  }
}

// The extension ignores SIGTERM and never answers shutdown: the ladder alone would take
// its full course (about 1.5 s); a second SIGINT ends it at once.
TEST_F(CliSignals, ASecondSigintKillsWhatTheLadderIsStillStopping) {
  manifest("ignore-sigterm");
  Command call(args({"call", dir.string(), "echo"}), root / "out", root / "err");
  ASSERT_TRUE(stalled_now()) << call.err();
  const auto first = Clock::now();
  call.signal(SIGINT);
  std::this_thread::sleep_for(100ms);
  call.signal(SIGINT);
  const auto status = call.wait(k_exit_bound);
  const auto took = Clock::now() - first;
  EXPECT_EQ(describe(status), exited_with(130)) << call.err();
  EXPECT_LT(took, 1000ms) << "the ladder was not cut short";
  EXPECT_TRUE(ends_with(call.err(), "exthost: interrupted (SIGINT); every extension killed\n")) << call.err();
  EXPECT_TRUE(gone_soon(stalled.pid));
  EXPECT_TRUE(gone_soon(stalled.child));
}

// Streamed text has no newline of its own: the interruption ends the line.
TEST_F(CliSignals, AnInterruptedStreamLeavesAWholeLine) {
  manifest();
  Command complete(args({"complete", dir.string(), R"({"messages":[]})", "--stream"}), root / "out", root / "err");
  ASSERT_TRUE(stalled_now()) << complete.err();
  ASSERT_TRUE(wait_until([&] { return complete.out() == "partial"; }, k_ready_bound)) << complete.out();
  complete.signal(SIGTERM);
  EXPECT_EQ(describe(complete.wait(k_exit_bound)), exited_with(143)) << complete.err();
  EXPECT_EQ(complete.out(), "partial\n");
  EXPECT_TRUE(ends_with(complete.err(), "exthost: interrupted (SIGTERM); every extension stopped\n")) << complete.err();
  EXPECT_TRUE(gone_soon(stalled.pid));
}

// A hook handler cut off by the stop answers nothing: no default verdict is printed, and
// its failure is not reported as the extension's.
TEST_F(CliSignals, AnInterruptedHookPrintsNoVerdict) {
  manifest("", true);
  Command hook(args({"hook", dir.string(), "before_tool_call", R"({"tool_name":"bash"})"}), root / "out", root / "err");
  ASSERT_TRUE(stalled_now()) << hook.err();
  hook.signal(SIGHUP);
  EXPECT_EQ(describe(hook.wait(k_exit_bound)), exited_with(129)) << hook.err();
  EXPECT_EQ(hook.out(), "");
  EXPECT_EQ(hook.err(), "exthost: interrupted (SIGHUP); every extension stopped\n");
  EXPECT_TRUE(gone_soon(stalled.pid));
  EXPECT_TRUE(gone_soon(stalled.child));
}

// The extension never answers initialize, whose own deadline is 10 s: the signal stops the
// load itself.
TEST_F(CliSignals, ASignalWhileLoadingStopsTheLoad) {
  manifest("hang-init");
  Command call(args({"call", dir.string(), "echo"}), root / "out", root / "err");
  ASSERT_TRUE(stalled_now()) << call.err();
  const auto sent = Clock::now();
  call.signal(SIGINT);
  EXPECT_EQ(describe(call.wait(k_exit_bound)), exited_with(130)) << call.err();
  EXPECT_LT(Clock::now() - sent, 3s) << "the load waited for initialize's deadline";
  EXPECT_TRUE(ends_with(call.err(), "exthost: interrupted (SIGINT); every extension stopped\n")) << call.err();
  EXPECT_TRUE(gone_soon(stalled.pid));
  EXPECT_TRUE(gone_soon(stalled.child));
}

// Discovery stops at the plugin it is loading; no later one is spawned.
TEST_F(CliSignals, ASignalDuringDiscoveryStopsIt) {
  manifest("hang-init");
  fs::create_directories(root / "home" / "plugins");
  fs::copy(dir, root / "home" / "plugins" / "stall-plugin", fs::copy_options::recursive);
  Command list(args({"list"}), root / "out", root / "err");
  ASSERT_TRUE(stalled_now()) << list.err();
  const auto sent = Clock::now();
  list.signal(SIGTERM);
  EXPECT_EQ(describe(list.wait(k_exit_bound)), exited_with(143)) << list.err();
  EXPECT_LT(Clock::now() - sent, 3s);
  EXPECT_EQ(list.out(), "");
  EXPECT_TRUE(gone_soon(stalled.pid));
  EXPECT_TRUE(gone_soon(stalled.child));
}

// The checker runs its child without a host: a signal kills that child's group itself.
TEST_F(CliSignals, AnInterruptedConformanceCheckKillsItsExtensionsGroup) {
  manifest("hang-init");
  Command conformance(args({"conformance", dir.string(), "--timeout", "30"}), root / "out", root / "err");
  ASSERT_TRUE(stalled_now()) << conformance.err();
  const auto sent = Clock::now();
  conformance.signal(SIGINT);
  EXPECT_EQ(describe(conformance.wait(k_exit_bound)), exited_with(130)) << conformance.err();
  EXPECT_LT(Clock::now() - sent, 2s) << "the 30 s step was not cut short";
  EXPECT_EQ(conformance.out(), "");
  EXPECT_TRUE(gone_soon(stalled.pid));
  EXPECT_TRUE(gone_soon(stalled.child));
}

// The first signal cancels the operation under way before the ladder stops every extension:
// the extension (mode cancel-record, which declares cancellation) receives "$/cancelRequest"
// for its own request, and a command prints what it had sent.
class CliCancel : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("exthost-cli-cancel-" + std::to_string(::getpid()));
    dir = root / "rec";
    fs::create_directories(dir / ".synaps-plugin");
    log = root / "record.jsonl";
    std::ofstream(dir / ".synaps-plugin/plugin.json")
        << R"({"extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION
        << R"(","args":["cancel-record",")" << log.string()
        << R"("],"permissions":["tools.register","providers.register"]}})";
  }
  void TearDown() override { fs::remove_all(root); }

  std::vector<boost::json::object> records() const {
    std::vector<boost::json::object> out;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(boost::json::parse(line).as_object());
    }
    return out;
  }
  // The extension's id of the `method` request it holds, once it has it.
  std::optional<boost::json::value> received(const std::string& method) const {
    for (const auto& r : records()) {
      if (r.contains("received") && r.at("received").as_string() == method) return r.at("id");
    }
    return std::nullopt;
  }
  bool cancel_received_for(const boost::json::value& id) const {
    return wait_until(
        [&] {
          for (const auto& r : records()) {
            if (r.contains("cancel") && r.at("cancel") == id) return true;
          }
          return false;
        },
        k_ready_bound);
  }
  std::vector<std::string> args(std::vector<std::string> a) const {
    a.push_back("--home");
    a.push_back((root / "home").string());
    return a;
  }

  fs::path root, dir, log;
};

TEST_F(CliCancel, SigintCancelsTheToolCallInFlightThenStopsEverything) {
  Command call(args({"call", dir.string(), "wait"}), root / "out", root / "err");
  ASSERT_TRUE(wait_until([&] { return received("tool.call").has_value(); }, k_ready_bound)) << call.err();
  call.signal(SIGINT);
  EXPECT_EQ(describe(call.wait(k_exit_bound)), exited_with(130)) << call.err();
  EXPECT_TRUE(cancel_received_for(*received("tool.call"))) << "the extension learnt which request ended";
  EXPECT_EQ(call.out(), "");
  EXPECT_EQ(call.err(), "exthost: interrupted (SIGINT); every extension stopped\n");
}

TEST_F(CliCancel, SigintCancelsACommandWhichPrintsWhatItHadSent) {
  Command invoke(args({"invoke", dir.string(), "partial", "--json"}), root / "out", root / "err");
  const std::string events = R"({"event":{"kind":"text","content":"first"}})"
                             "\n"
                             R"({"event":{"kind":"text","content":"second"}})"
                             "\n";
  ASSERT_TRUE(wait_until([&] { return received("command.invoke").has_value() && invoke.out() == events; },
                         k_ready_bound))
      << invoke.out() << invoke.err();
  invoke.signal(SIGINT);
  EXPECT_EQ(describe(invoke.wait(k_exit_bound)), exited_with(130)) << invoke.err();
  EXPECT_EQ(invoke.out(), events + R"({"cancelled":true})" + "\n") << "cancelled, not failed by the stop";
  EXPECT_TRUE(cancel_received_for(*received("command.invoke")));
  EXPECT_EQ(invoke.err(), "exthost: interrupted (SIGINT); every extension stopped\n");
}

std::string frame(const std::string& body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body; }

// Needs serve() to read ServeOptions::stop_fd: enable it together with that.
TEST_F(CliSignals, ServeStopsEveryExtensionOnSigterm) {
  const bool daemons_contained = contained();
  fs::remove(pids_file);
  manifest();
  int input[2];
  ASSERT_EQ(::pipe2(input, O_CLOEXEC), 0);
  Command serve(args({"serve"}), root / "out", root / "err", input[0]);
  ::close(input[0]);
  // Requests run concurrently: the call goes once the load has answered.
  const std::string load = frame(R"({"jsonrpc":"2.0","id":1,"method":"host.load","params":{"path":")" + dir.string() + R"("}})");
  ASSERT_EQ(::write(input[1], load.data(), load.size()), static_cast<ssize_t>(load.size()));
  ASSERT_TRUE(wait_until([&] { return serve.out().find(R"("id":1)") != std::string::npos; }, k_ready_bound)) << serve.err();
  const std::string call = frame(R"({"jsonrpc":"2.0","id":2,"method":"tool.call","params":{"tool":"stall-plugin:echo"}})");
  ASSERT_EQ(::write(input[1], call.data(), call.size()), static_cast<ssize_t>(call.size()));
  ASSERT_TRUE(stalled_now()) << serve.out() << serve.err();
  const auto sent = Clock::now();
  serve.signal(SIGTERM);
  const auto status = serve.wait(k_exit_bound);
  EXPECT_LT(Clock::now() - sent, k_exit_bound);
  EXPECT_EQ(describe(status), exited_with(143)) << serve.err();
  ::close(input[1]);  // the input never ended: the signal alone stopped the server
  EXPECT_TRUE(gone_soon(stalled.pid));
  EXPECT_TRUE(gone_soon(stalled.child));
  if (daemons_contained) {
    EXPECT_TRUE(gone_soon(stalled.daemon));
  }
}

}  // namespace
