// The exthost command: load a plugin, report on it, call its tools.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "exit_codes.hpp"
#include "exthost/host.hpp"
#include "exthost/version.hpp"
#include "json_text.hpp"

namespace {

using namespace exthost;
using namespace exthost::cli;

int fail(const Error& e) {
  std::cerr << "exthost: error: " << e.message << "\n";
  return exit_code_for(e.kind);
}

std::string info_json(const ExtensionInfo& info) {
  std::string out = "{\"id\":" + json_string(info.id) + ",\"health\":" + json_string(to_string(info.health)) +
                    ",\"generation\":" + std::to_string(info.generation) + ",\"tools\":[";
  for (std::size_t i = 0; i < info.tools.size(); ++i) {
    const auto& t = info.tools[i];
    if (i) out += ',';
    out += "{\"name\":" + json_string(t.name) + ",\"description\":" + json_string(t.description) +
           ",\"input_schema\":" + t.input_schema_json + "}";
  }
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", info.init_ms);
  out += "],\"init_ms\":" + std::string(ms) + "}";
  return out;
}

void print_info(const ExtensionInfo& info) {
  std::printf("plugin:     %s\n", info.id.c_str());
  std::printf("health:     %s\n", std::string(to_string(info.health)).c_str());
  std::printf("generation: %llu\n", static_cast<unsigned long long>(info.generation));
  std::printf("initialize: %.1f ms (spawn to answer)\n", info.init_ms);
  std::printf("tools:      %zu\n", info.tools.size());
  for (const auto& t : info.tools) std::printf("  %-20s %s\n", t.name.c_str(), t.description.c_str());
}

HostOptions options_with_timeout(double timeout_seconds) {
  HostOptions opts;
  if (timeout_seconds > 0) {
    const auto ms = std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000));
    opts.tool_call_timeout = ms;
    opts.initialize_timeout = ms;
    opts.other_timeout = ms;
  }
  return opts;
}

int run_check(const std::string& dir, bool json, double timeout) {
  Host host(options_with_timeout(timeout));
  auto info = host.load(dir);
  if (!info) return fail(info.error());
  if (json) {
    std::printf("%s\n", info_json(*info).c_str());
  } else {
    print_info(*info);
  }
  auto stopped = host.unload(info->id);
  if (!stopped) return fail(stopped.error());
  return k_exit_ok;
}

int run_call(const std::string& dir, const std::string& tool, const std::string& input, bool json, double timeout) {
  Host host(options_with_timeout(timeout));
  auto info = host.load(dir);
  if (!info) return fail(info.error());
  auto result = host.call_tool(info->id, tool, input);
  auto stopped = host.unload(info->id);
  if (!result) return fail(result.error());
  if (json) {
    std::printf("{\"result\":%s}\n", result->c_str());
  } else {
    std::printf("%s\n", result->c_str());
  }
  if (!stopped) return fail(stopped.error());
  return k_exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"exthost — host AI-agent extensions (JSON-RPC 2.0 over stdio) and test them."};
  app.footer(k_exit_code_table);
  app.set_version_flag("--version", std::string(k_version));
  app.require_subcommand(1);

  std::string dir, tool, input;
  bool json = false;
  double timeout = 0;

  auto* check = app.add_subcommand("check", "Spawn and handshake a plugin's extension, report it, stop it.");
  check->add_option("PLUGIN_DIR", dir, "Plugin directory (holds .synaps-plugin/plugin.json)")->required();
  check->add_flag("--json", json, "Print one JSON object on stdout");
  check->add_option("--timeout", timeout, "Deadline in seconds for the handshake (default 10)");

  auto* call = app.add_subcommand("call", "Call one tool of a plugin's extension and print its result.");
  call->add_option("PLUGIN_DIR", dir, "Plugin directory (holds .synaps-plugin/plugin.json)")->required();
  call->add_option("TOOL", tool, "Tool name, as the extension declares it")->required();
  call->add_option("INPUT_JSON", input, "Tool input as JSON (default {})");
  call->add_flag("--json", json, "Print {\"result\": <the extension's result>} on stdout");
  call->add_option("--timeout", timeout, "Deadline in seconds for the call (default 120)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return k_exit_usage;
  }
  try {
    if (check->parsed()) return run_check(dir, json, timeout);
    if (call->parsed()) return run_call(dir, tool, input, json, timeout);
  } catch (const std::exception& e) {
    std::cerr << "exthost: internal error: " << e.what() << "\n";
    return k_exit_internal;
  }
  return k_exit_usage;
}
