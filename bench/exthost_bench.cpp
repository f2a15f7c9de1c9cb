// exthost-bench — the benchmark host of the anchor harness (bench/anchors contract), through
// exthost's public API only (<exthost/host.hpp>):
//   exthost-bench [--seq N] [--warmup N] [--pipe N] [--depth D] [--flood N] [--size BYTES]
//                 [--hooks N] [--hook-calls N] [--serve 0|1] -- EXT [ARGS...]
// Loads EXT as a plugin of a temporary folder, measures, stops it, and prints one line of
// key=value pairs. Every timed result is checked; any failure exits 1.
//
// The anchors' extension answers initialize with empty capabilities, and a Host calls only
// tools an extension registered. So the calls go to a plugin whose command is
// exthost-bench-handshake: it answers initialize in EXT's place (tool "echo",
// capabilities.concurrency = min(--depth, 64)), then starts EXT on the same pipes and steps
// aside — every call travels between the Host and EXT alone. It reports how EXT ended,
// which must be exit 0 after the Host's shutdown.
//
// What each figure goes through:
// - init_ms: Host::load of a plugin that runs EXT itself; ExtensionInfo::init_ms, the
//   launch (containment included) → EXT's own initialize answer.
// - seq_*: Host::call_tool, one call at a time from this thread: input text parsed, the
//   tool registry, before_tool_call and after_tool_call through an empty hook bus, the
//   call, the result serialized to text, and the hand-off to and from the I/O thread.
// - pipe_calls_per_s: Host::call_named_tool with a Completion, --depth calls outstanding;
//   each completion (on the Host's callback thread) checks its result and starts the next.
// - serve_*: the same calls from a C client through `exthost serve` on pipes
//   (exthost-bench-serve-client, which prints these keys): sequential round trips and calls
//   with min(--depth, 64) outstanding, a quarter of --seq, --warmup and --pipe each.
// - hook_emit_p50_us: Host::emit_hook of a before_tool_call event to --hooks subscribers
//   (exthost-bench-hook-subscriber, each answering continue), one event at a time.
// - hooked_call_p50_us: Host::call_tool of the echo tool with those subscribers loaded, so
//   each call first goes through --hooks before_tool_call hooks.
// The hook figures take --hook-calls samples each (default --seq / 40) after a tenth as many
// unrecorded ones. --flood and --size are accepted for the harness and ignored: the public
// API cannot send the anchors' bench.flood; exthost-bench-runtime measures the flood.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "exthost/host.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// The calls a protocol-1 extension may declare to take at once, and the requests exthost
// serve runs at once.
constexpr long k_max_concurrency = 64;

const std::string k_input = R"({"text":"hello, extension! 0123456789"})";
const std::string k_echoed = R"({"content":)" + k_input + "}";
const std::string k_hook_event =
    R"({"kind":"before_tool_call","tool_name":"bench_echo","tool_runtime_name":"bench:echo","tool_input":)" + k_input +
    "}";
const std::string k_continue = R"({"action":"continue"})";

struct Options {
  long seq = 20000, warmup = 2000, pipe = 100000, depth = 64, flood = 4000, size = 65536;
  long hooks = 100, hook_calls = -1, serve = 1;
  std::vector<std::string> ext;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "exthost-bench: %s\n", why.c_str());
  std::_Exit(1);  // no destructors: a Host may be mid-call on its own threads
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) die("missing value for " + a);
    const long v = std::atol(argv[++i]);
    if (a == "--seq") o.seq = v;
    else if (a == "--warmup") o.warmup = v;
    else if (a == "--pipe") o.pipe = v;
    else if (a == "--depth") o.depth = v;
    else if (a == "--flood") o.flood = v;
    else if (a == "--size") o.size = v;
    else if (a == "--hooks") o.hooks = v;
    else if (a == "--hook-calls") o.hook_calls = v;
    else if (a == "--serve") o.serve = v;
    else die("unknown option " + a);
  }
  // The extension runs in its plugin folder: paths relative to here become absolute.
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    std::error_code ec;
    const bool is_path = o.ext.empty() ? a.find('/') != std::string::npos : fs::exists(a, ec);
    o.ext.push_back(is_path ? fs::absolute(a).string() : a);
  }
  if (o.ext.empty()) die("usage: exthost-bench [options] -- EXT [ARGS...]");
  if (o.depth < 1) o.depth = 1;
  if (o.hook_calls < 0) o.hook_calls = o.seq / 40;
  return o;
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", c);
      out += u;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + json_string(v[i]);
  return out + "]";
}

// A plugin folder <dir> whose manifest runs `command` with `args`; `extra` goes into the
// extension block as it is (permissions, hooks).
fs::path write_plugin(const fs::path& dir, const std::string& command, const std::vector<std::string>& args,
                      const std::string& extra) {
  fs::create_directories(dir / ".synaps-plugin");
  std::ofstream(dir / ".synaps-plugin" / "plugin.json")
      << R"({"extension":{"protocol_version":1,"runtime":"process","command":)" << json_string(command)
      << R"(,"args":)" << json_strings(args) << "," << extra << "}}\n";
  return dir;
}

// EXT behind exthost-bench-handshake, which writes how EXT ended to <dir>/status.
fs::path write_handshake_plugin(const fs::path& dir, const fs::path& shim, long concurrency,
                                const std::vector<std::string>& ext) {
  std::vector<std::string> args{(dir / "status").string(), std::to_string(concurrency)};
  args.insert(args.end(), ext.begin(), ext.end());
  return write_plugin(dir, shim.string(), args, R"("permissions":["tools.register"])");
}

void require_exit_0(const fs::path& dir) {
  std::ifstream in(dir / "status");
  std::string line;
  std::getline(in, line);
  if (line != "exit 0") die("the extension did not exit 0 (" + (line.empty() ? "no status" : line) + ")");
}

struct Percentiles {
  double p50 = 0, p99 = 0, mean = 0;
};

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  p.p50 = v[v.size() / 2];
  p.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
  for (double x : v) p.mean += x;
  p.mean /= static_cast<double>(v.size());
  return p;
}

// `warmup` unrecorded runs of `op`, then `count` timed ones; `op` checks its own result.
template <class Op>
Percentiles timed(long warmup, long count, Op op) {
  std::vector<double> lat;
  lat.reserve(static_cast<std::size_t>(std::max(0L, count)));
  for (long i = 0; i < warmup + count; ++i) {
    const auto s = Clock::now();
    auto r = op();
    const auto e = Clock::now();
    r.check();
    if (i >= warmup) lat.push_back(micros(e - s));
  }
  return percentiles(std::move(lat));
}

// One result to check after the clock stopped.
struct Checked {
  exthost::Result<std::string> result;
  const std::string* expected;
  const char* what;
  void check() const {
    if (!result) die(std::string(what) + " failed: " + result.error().message);
    if (*result != *expected) die(std::string(what) + ": unexpected answer " + *result);
  }
};

// --depth calls outstanding through the Completion API until `total` have completed.
class Pipeline {
 public:
  Pipeline(exthost::Host& host, long total) : m_host(host), m_total(total) {}

  double run(long depth) {
    const auto s = Clock::now();
    for (long d = 0; d < depth; ++d) start_next();
    std::unique_lock lock(m_mutex);
    m_all_done.wait(lock, [&] { return m_done == m_total; });
    const double seconds = std::chrono::duration<double>(Clock::now() - s).count();
    if (!m_failure.empty()) die(m_failure);
    return static_cast<double>(m_total) / seconds;
  }

 private:
  void start_next() {
    if (m_started.fetch_add(1) >= m_total) return;
    m_host.call_named_tool("bench:echo", k_input, {}, [this](exthost::Result<std::string> r) { finished(r); });
  }

  // On the Host's callback thread, one completion at a time.
  void finished(const exthost::Result<std::string>& r) {
    if (m_failure.empty()) {
      if (!r) m_failure = "pipelined tool.call failed: " + r.error().message;
      else if (*r != k_echoed) m_failure = "pipelined tool.call: unexpected answer " + *r;
    }
    start_next();
    std::lock_guard lock(m_mutex);
    if (++m_done == m_total) m_all_done.notify_one();
  }

  exthost::Host& m_host;
  const long m_total;
  std::atomic<long> m_started{0};
  std::string m_failure;  // the callback thread's only
  std::mutex m_mutex;
  std::condition_variable m_all_done;
  long m_done = 0;
};

// Runs `argv` with its stdout on a pipe; its whole output, after requiring exit 0.
std::string output_of(const std::vector<std::string>& argv) {
  // Everything the child needs is ready before the fork: the Host's threads run meanwhile,
  // so the child may only make system calls until it execs.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) die("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) die("fork failed");
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(args[0], args.data());
    static const char failed[] = "exthost-bench: cannot run a helper\n";
    [[maybe_unused]] const ssize_t n = ::write(2, failed, sizeof failed - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die(argv[0] + " failed");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
  const fs::path shim = bin / "exthost-bench-handshake";
  char root_template[] = "/tmp/exthost-bench-XXXXXX";
  if (!::mkdtemp(root_template)) die("cannot make a temporary folder");
  const fs::path root = root_template;

  exthost::HostOptions options;
  options.home = root / "home";
  exthost::Host host(options);

  // Spawn to EXT's own initialize answer. A plugin must hold a permission to register
  // anything, though this one registers nothing.
  auto direct = host.load(write_plugin(root / "plugins" / "direct", o.ext.front(),
                                       std::vector<std::string>(o.ext.begin() + 1, o.ext.end()),
                                       R"("permissions":["tools.register"])"));
  if (!direct) die("loading the extension failed: " + direct.error().message);
  const double init_ms = direct->init_ms;
  if (auto r = host.unload("direct"); !r) die("unload failed: " + r.error().message);

  // A cold session (--seq 0 --pipe 0) ends here, after one spawn as the anchors' hosts do.
  const bool hooks = o.hooks > 0 && o.hook_calls > 0;
  if (o.seq <= 0 && o.pipe <= 0 && !hooks) {
    host.shutdown_all();
    std::error_code ignored;
    fs::remove_all(root, ignored);
    std::printf("init_ms=%.2f seq_p50_us=0.0 seq_p99_us=0.0 seq_mean_us=0.0 pipe_calls_per_s=0\n", init_ms);
    return 0;
  }

  const long concurrency = std::min(o.depth, k_max_concurrency);
  const fs::path bench_dir = write_handshake_plugin(root / "plugins" / "bench", shim, concurrency, o.ext);
  auto loaded = host.load(bench_dir);
  if (!loaded) die("loading the extension behind the handshake failed: " + loaded.error().message);
  if (loaded->tools.size() != 1 || loaded->tools.front().runtime_name != "bench:echo") die("tool bench:echo missing");

  const long warmup = o.seq > 0 ? o.warmup : 0;  // as the anchors: no warm-up without a measurement
  const auto seq = timed(warmup, o.seq, [&] {
    return Checked{host.call_tool("bench", "echo", k_input), &k_echoed, "tool.call"};
  });

  double calls_per_s = 0;
  if (o.pipe > 0) calls_per_s = Pipeline(host, o.pipe).run(o.depth);

  std::string serve_keys;
  if (o.serve != 0 && (o.seq > 0 || o.pipe > 0)) {
    const fs::path serve_dir = write_handshake_plugin(root / "serve" / "bench", shim, concurrency, o.ext);
    serve_keys = output_of({(bin / "exthost-bench-serve-client").string(), "--seq", std::to_string(o.seq / 4),
                            "--warmup", std::to_string(o.seq > 0 ? o.warmup / 4 : 0), "--pipe",
                            std::to_string(o.pipe / 4), "--depth", std::to_string(concurrency), "--plugin",
                            serve_dir.string(), "--tool", "bench:echo", "--", (bin / "exthost").string(), "serve",
                            "--home", (root / "serve-home").string()});
    require_exit_0(serve_dir);
  }

  Percentiles emit, hooked;
  if (hooks) {
    const fs::path subscriber = bin / "exthost-bench-hook-subscriber";
    for (long i = 0; i < o.hooks; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "hook-%03ld", i);
      auto r = host.load(write_plugin(root / "hooks" / name, subscriber.string(), {},
                                      R"("permissions":["tools.intercept"],"hooks":[{"hook":"before_tool_call"}])"));
      if (!r) die("loading hook subscriber " + std::string(name) + " failed: " + r.error().message);
    }
    const long hook_warmup = std::max(1L, o.hook_calls / 10);
    emit = timed(hook_warmup, o.hook_calls, [&] {
      return Checked{host.emit_hook(k_hook_event), &k_continue, "hook.emit"};
    });
    hooked = timed(hook_warmup, o.hook_calls, [&] {
      return Checked{host.call_tool("bench", "echo", k_input), &k_echoed, "tool.call through hooks"};
    });
    // Every subscriber answered every event: the first and the last loaded.
    for (const long i : {0L, o.hooks - 1}) {
      char name[32];
      std::snprintf(name, sizeof name, "hook-%03ld", i);
      auto stats = host.stats(name);
      if (!stats) die("stats failed: " + stats.error().message);
      if (stats->calls_ok < static_cast<std::uint64_t>(2 * (hook_warmup + o.hook_calls))) {
        die("hook subscriber " + std::string(name) + " answered fewer events than were sent");
      }
    }
  }

  host.shutdown_all();
  require_exit_0(bench_dir);
  std::error_code ignored;
  fs::remove_all(root, ignored);

  std::printf("init_ms=%.2f seq_p50_us=%.1f seq_p99_us=%.1f seq_mean_us=%.1f pipe_calls_per_s=%.0f", init_ms, seq.p50,
              seq.p99, seq.mean, calls_per_s);
  if (!serve_keys.empty()) std::printf(" %s", serve_keys.c_str());
  if (hooks) {
    std::printf(" hook_subscribers=%ld hook_emit_p50_us=%.1f hook_emit_p99_us=%.1f hooked_call_p50_us=%.1f "
                "hooked_call_p99_us=%.1f",
                o.hooks, emit.p50, emit.p99, hooked.p50, hooked.p99);
  }
  std::printf("\n");
  return 0;
}
