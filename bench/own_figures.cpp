// exthost-own-figures — exthost's own benchmark figures, beside the anchors' (make bench):
//   exthost-own-figures FAKE_EXTENSION ECHO_PLUGIN_DIR WORDCOUNT_PLUGIN_DIR
//   exthost-own-figures --roundtrips N FAKE_EXTENSION     (for callgrind: N calls, nothing else)
// Prints key=value lines:
// - invoke_flood_peak_rss_growth_kib: the host's peak resident memory growth while one
//   command.invoke streams 40 MiB of command.output (640 events of 64 KiB) through the
//   bounded collector (target: at most 4 MiB);
// - idle_extension_kib: the host's resident memory per loaded, idle extension, 100 loaded;
// - init_ms_cpp / init_ms_python: spawn to initialized for the C++ and Python examples
//   (median of 15 loads each).
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exthost/host.hpp"

namespace fs = std::filesystem;

namespace {

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "exthost-own-figures: %s\n", why.c_str());
  std::exit(1);
}

fs::path fake_plugin(const fs::path& root, const std::string& name, const std::string& fake,
                     const std::string& mode) {
  const auto dir = root / name;
  fs::create_directories(dir / ".synaps-plugin");
  std::ofstream(dir / ".synaps-plugin" / "plugin.json")
      << R"({"extension":{"runtime":"process","command":")" << fake << R"(","args":[")" << mode
      << R"("],"permissions":["tools.register"]}})";
  return dir;
}

exthost::HostOptions options(const fs::path& root) {
  exthost::HostOptions o;
  o.home = root / "home";
  o.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  return o;
}

double median_init_ms(const fs::path& plugin, const fs::path& root) {
  exthost::Host host(options(root));
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    auto info = host.load(plugin);
    if (!info) die(info.error().message);
    ms.push_back(info->init_ms);
    if (!host.unload(info->id)) die("unload failed");
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path root = fs::temp_directory_path() / ("exthost-own-figures-" + std::to_string(::getpid()));
  fs::remove_all(root);
  if (argc == 4 && std::string(argv[1]) == "--roundtrips") {
    exthost::Host host(options(root));
    auto info = host.load(fake_plugin(root, "rt", fs::absolute(argv[3]).string(), "echo"));
    if (!info) die(info.error().message);
    const long n = std::atol(argv[2]);
    for (long i = 0; i < n; ++i) {
      if (!host.call_tool("rt", "echo", R"({"i":1})")) die("call failed");
    }
    fs::remove_all(root);
    return 0;
  }
  if (argc != 4) die("usage: exthost-own-figures FAKE_EXTENSION ECHO_PLUGIN_DIR WORDCOUNT_PLUGIN_DIR");
  const std::string fake = fs::absolute(argv[1]).string();
  {
    exthost::Host host(options(root));
    auto info = host.load(fake_plugin(root, "flood", fake, "commands"));
    if (!info) die(info.error().message);
    auto warm = host.invoke_command("flood", "flood", {"16", "65536"});
    if (!warm) die(warm.error().message);
    const long before = peak_rss_kib();
    auto out = host.invoke_command("flood", "flood", {"640", "65536"});
    if (!out) die(out.error().message);
    if (out->counters.produced_bytes < 40ull * 1024 * 1024) die("the flood was smaller than 40 MiB");
    std::printf("invoke_flood_peak_rss_growth_kib=%ld\n", peak_rss_kib() - before);
  }
  {
    exthost::Host host(options(root));
    auto first = host.load(fake_plugin(root, "idle-0", fake, "echo"));  // warm the host up
    if (!first) die(first.error().message);
    const long before = rss_kib();
    for (int i = 1; i <= 100; ++i) {
      auto info = host.load(fake_plugin(root, "idle-" + std::to_string(i), fake, "echo"));
      if (!info) die(info.error().message);
    }
    std::printf("idle_extension_kib=%.1f\n", static_cast<double>(rss_kib() - before) / 100.0);
  }
  std::printf("init_ms_python=%.2f\n", median_init_ms(argv[2], root));
  std::printf("init_ms_cpp=%.2f\n", median_init_ms(argv[3], root));
  fs::remove_all(root);
  return 0;
}
