// exthost-bench-runtime — the anchor harness's host contract one layer below the public API:
//   exthost-bench-runtime [--seq N] [--warmup N] [--pipe N] [--depth D] [--flood N] [--size BYTES] -- EXT [ARGS...]
// Spawns EXT through exthost's own runtime, handshakes, measures, stops it, and prints one
// line of key=value pairs. Every timed result is checked. exthost-bench measures the same
// through the public API; this one stays for what the public API cannot reach against the
// anchors' extension (its bench.flood method) and to show what the public path adds.
//
// What each figure goes through:
// - init_ms: Child spawn (containment included) → initialize answered (ProcessExtension).
// - seq_*: ProcessExtension::call_tool_for, the full call path (call lock, deadline,
//   tool.call params, restart handling), one call at a time, on the I/O thread itself.
// - pipe_calls_per_s: rpc::Connection::call with --depth calls in flight, the connection's
//   own path under any limit the runtime puts on calls in flight.
// - flood_mb_per_s: bench.flood's command.output notifications through the reader, the
//   bounded subscriber queue and a consumer.
// - flood_peak_rss_growth_kib (exthost's own figure): how much the host's peak resident
//   memory grew from before the warm-up flood to after the measured one.
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <vector>

#include "rpc/event.hpp"
#include "process/cgroup.hpp"
#include "runtime/process_extension.hpp"
#include "wire/json.hpp"

namespace asio = boost::asio;
namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;
using exthost::Result;

namespace {

struct Options {
  long seq = 20000, warmup = 2000, pipe = 100000, depth = 64, flood = 4000, size = 65536;
  std::vector<std::string> ext;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "exthost-bench-runtime: %s\n", why.c_str());
  std::exit(1);
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
    else die("unknown option " + a);
  }
  for (; i < argc; ++i) o.ext.emplace_back(argv[i]);
  if (o.ext.empty()) die("usage: exthost-bench-runtime [options] -- EXT [ARGS...]");
  return o;
}

// Peak resident set size of this process so far, in KiB.
long peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

const json::value& echo_input() {
  static const json::value v = json::parse(R"({"text":"hello, extension! 0123456789"})");
  return v;
}

void check_echo(const Result<json::value>& r) {
  if (!r) die("tool.call failed: " + r.error().message);
  const auto* o = r.value().if_object();
  if (!o || !o->contains("content") || o->at("content") != echo_input()) die("bad echo: " + exthost::wire::to_json(r.value()));
}

asio::awaitable<void> pipe_worker(std::shared_ptr<exthost::rpc::Connection> conn, long& remaining, std::uint64_t& next_id,
                                  const json::value& params) {
  while (remaining > 0) {
    --remaining;
    auto r = co_await conn->call("tool.call", params, next_id++);
    check_echo(r);
  }
}

asio::awaitable<long> drain_flood(exthost::rpc::Subscription& sub, long count, long size, long& bytes) {
  long seen = 0;
  while (seen < count) {
    auto frame = co_await sub.queue().pop();
    if (!frame) die("notification stream ended early");
    if (frame->method != "command.output") continue;
    const auto& p = frame->params.as_object();
    if (p.at("seq").as_int64() != seen) die("flood out of order");
    const auto& data = p.at("data").as_string();
    if (static_cast<long>(data.size()) != size) die("flood payload of the wrong size");
    bytes += static_cast<long>(data.size());
    ++seen;
  }
  co_return seen;
}

// The flood request; a failed call ends the run at once (the drain would wait forever).
asio::awaitable<Result<json::value>> flood_request(exthost::runtime::ProcessExtension& ext, json::value params) {
  auto r = co_await ext.call("bench.flood", std::move(params));
  if (!r) die("bench.flood failed: " + r.error().message);
  co_return r;
}

asio::awaitable<double> flood(exthost::runtime::ProcessExtension& ext, long count, long size) {
  auto sub = ext.subscribe_notifications();
  json::object params{{"count", count}, {"size", size}};
  long bytes = 0;
  const auto t0 = Clock::now();
  auto both = co_await (flood_request(ext, json::value(params)) && drain_flood(sub, count, size, bytes));
  const auto t1 = Clock::now();
  const auto& r = std::get<0>(both);
  if (!r) die("bench.flood failed: " + r.error().message);
  if (r.value().as_object().at("count").as_int64() != count || bytes != count * size) die("flood totals differ");
  co_return static_cast<double>(bytes) / 1e6 / std::chrono::duration<double>(t1 - t0).count();
}

asio::awaitable<int> bench(Options o) {
  auto ex = co_await asio::this_coro::executor;
  exthost::runtime::ProcessSpec spec;
  spec.id = "bench";
  spec.command = o.ext.front();
  spec.args.assign(o.ext.begin() + 1, o.ext.end());
  exthost::process::prepare_cgroups();  // as exthost::Host does when it starts, before any spawn
  const auto t0 = Clock::now();
  auto spawned = co_await exthost::runtime::ProcessExtension::spawn(ex, spec);
  if (!spawned) die(spawned.error().message);
  auto ext = std::move(spawned).value();
  auto init = co_await ext->initialize(std::nullopt, json::object());
  const double init_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!init) die(init.error().message);

  std::vector<double> lat;
  lat.reserve(static_cast<std::size_t>(o.seq));
  const long warmup = o.seq > 0 ? o.warmup : 0;  // as the anchors: no warm-up without a measurement
  for (long i = 0; i < warmup + o.seq; ++i) {
    const auto s = Clock::now();
    auto r = co_await ext->call_tool_for("echo", echo_input(), std::nullopt, std::nullopt);
    const auto e = Clock::now();
    check_echo(r);
    if (i >= warmup) lat.push_back(micros(e - s));
  }
  double p50 = 0, p99 = 0, mean = 0;
  if (!lat.empty()) {
    std::sort(lat.begin(), lat.end());
    p50 = lat[lat.size() / 2];
    p99 = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
    for (double v : lat) mean += v;
    mean /= static_cast<double>(lat.size());
  }

  double calls_per_s = 0;
  if (o.pipe > 0) {
    auto conn = ext->connection();
    const json::value params = json::object{{"name", "echo"}, {"input", echo_input()}};
    long remaining = o.pipe;
    std::uint64_t next_id = std::uint64_t{1} << 40;  // far from the runtime's own ids
    const auto s = Clock::now();
    long finished = 0;
    exthost::rpc::Event all_done(ex);
    for (long d = 0; d < o.depth; ++d) {
      asio::co_spawn(ex, pipe_worker(conn, remaining, next_id, params), [&](std::exception_ptr) {
        if (++finished == o.depth) all_done.notify();
      });
    }
    while (finished < o.depth) co_await all_done.wait();
    calls_per_s = static_cast<double>(o.pipe) / std::chrono::duration<double>(Clock::now() - s).count();
  }

  double mb_per_s = 0;
  long flood_rss_growth_kib = 0;
  if (o.flood > 0) {
    const long peak_before = peak_rss_kib();
    co_await flood(*ext, std::max(1L, o.flood / 10), o.size);  // warm-up
    mb_per_s = co_await flood(*ext, o.flood, o.size);
    flood_rss_growth_kib = peak_rss_kib() - peak_before;
  }

  auto child = ext->child();
  if (auto conn = ext->connection()) co_await conn->notify("exit", nullptr);
  co_await ext->shutdown();
  const auto status = child->wait_status();
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) die("the extension did not exit 0");
  // One extra key beyond the anchors' contract: how much the host's peak resident memory
  // grew while the flood went through (the anchors' tables ignore keys they do not know).
  std::printf("init_ms=%.2f seq_p50_us=%.1f seq_p99_us=%.1f seq_mean_us=%.1f pipe_calls_per_s=%.0f flood_mb_per_s=%.0f "
              "flood_peak_rss_growth_kib=%ld\n",
              init_ms, p50, p99, mean, calls_per_s, mb_per_s, flood_rss_growth_kib);
  co_return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  Options o = parse(argc, argv);
  asio::io_context io(1);
  auto result = asio::co_spawn(io, bench(std::move(o)), asio::use_future);
  io.run();
  return result.get();
}
