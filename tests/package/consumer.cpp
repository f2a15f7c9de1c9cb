// Loads the plugin given on the command line through the installed library and calls its
// echo tool; prints the result. Exits non-zero on any failure.
#include <exthost/host.hpp>
#include <exthost/json_text.hpp>
#include <exthost/version.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  exthost::HostOptions options;
  options.home = argv[2];
  exthost::Host host(options);
  auto info = host.load(argv[1]);
  if (!info) {
    std::fprintf(stderr, "%s\n", info.error().message.c_str());
    return 1;
  }
  auto result = host.call_tool(info->id, "echo", R"({"text":"from an installed exthost"})");
  if (!result) {
    std::fprintf(stderr, "%s\n", result.error().message.c_str());
    return 1;
  }
  std::printf("exthost %s: %s\n", std::string(exthost::k_version).c_str(), result->c_str());
  return 0;
}
