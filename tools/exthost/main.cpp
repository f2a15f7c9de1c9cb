// The exthost command: load a plugin, report on it, call its tools.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "exthost/host.hpp"
#include "exthost/json_text.hpp"
#include "exthost/serve.hpp"
#include "exthost/version.hpp"
#include "render.hpp"

namespace {

using namespace exthost;

// `s` as a JSON string literal.
std::string json_string(std::string_view s) { return boost::json::serialize(boost::json::string_view(s.data(), s.size())); }
using namespace exthost::cli;

int fail(const Error& e) {
  std::cerr << "exthost: error: " << e.message << "\n";
  return exit_code_for(e.kind);
}

void print_info(const ExtensionInfo& info) {
  std::printf("plugin:     %s\n", info.id.c_str());
  std::printf("health:     %s\n", std::string(to_string(info.health)).c_str());
  std::printf("generation: %llu\n", static_cast<unsigned long long>(info.generation));
  std::printf("initialize: %.1f ms (spawn to answer)\n", info.init_ms);
  std::printf("tools:      %zu\n", info.tools.size());
  for (const auto& t : info.tools) std::printf("  %-20s %s\n", t.name.c_str(), t.description.c_str());
}

// Set by --home on any verb: the exthost home to use instead of the default.
std::string g_home;

HostOptions options_with_timeout(double timeout_seconds) {
  HostOptions opts;
  opts.home = g_home;
  if (timeout_seconds > 0) {
    const auto ms = std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000));
    opts.tool_call_timeout = ms;
    opts.initialize_timeout = ms;
    opts.other_timeout = ms;
    opts.command_invoke_timeout = ms;
    opts.provider_timeout = ms;
    opts.quick_timeout = ms;
  }
  return opts;
}

// Loads the plugin, runs `op` on it, unloads it; errors exit with their code.
template <class Op>
int with_plugin(const std::string& dir, double timeout, Op op) {
  Host host(options_with_timeout(timeout));
  auto info = host.load(dir);
  if (!info) return fail(info.error());
  const int rc = op(host, *info);
  auto stopped = host.unload(info->id);
  if (rc == k_exit_ok && !stopped) return fail(stopped.error());
  return rc;
}

int run_check(const std::string& dir, bool json, double timeout) {
  return with_plugin(dir, timeout, [&](Host&, const ExtensionInfo& info) {
    if (json) {
      std::printf("%s\n", to_json_text(info).c_str());
    } else {
      print_info(info);
    }
    return static_cast<int>(k_exit_ok);
  });
}

int run_call(const std::string& dir, const std::string& tool, const std::string& input, bool json, double timeout) {
  return with_plugin(dir, timeout, [&](Host& host, const ExtensionInfo& info) {
    auto result = host.call_tool(info.id, tool, input);
    if (!result) return fail(result.error());
    std::printf(json ? "{\"result\":%s}\n" : "%s\n", result->c_str());
    return static_cast<int>(k_exit_ok);
  });
}

int run_invoke(const std::string& dir, const std::string& command, const std::vector<std::string>& args, bool json,
               double timeout) {
  return with_plugin(dir, timeout, [&](Host& host, const ExtensionInfo& info) {
    auto out = host.invoke_command(info.id, command, args);
    if (!out) return fail(out.error());
    if (json) {  // JSON lines: every event, the notice if any, then the result
      for (const auto& e : out->events_json) std::printf("{\"event\":%s}\n", e.c_str());
      if (out->limit_notice) {
        std::printf("{\"notice\":%s,\"error\":%s}\n", json_string(*out->limit_notice).c_str(),
                    out->limit_notice_is_error ? "true" : "false");
      }
      std::printf("{\"result\":%s}\n", out->result_json.c_str());
      return static_cast<int>(k_exit_ok);
    }
    for (const auto& e : out->events_json) std::fputs(render_event(e).c_str(), stdout);
    if (out->limit_notice) std::fprintf(out->limit_notice_is_error ? stderr : stdout, "%s\n", out->limit_notice->c_str());
    return static_cast<int>(k_exit_ok);
  });
}

int run_complete(const std::string& dir, const std::string& params, bool stream, bool json, double timeout) {
  return with_plugin(dir, timeout, [&](Host& host, const ExtensionInfo& info) {
    Result<std::string> result = Error::internal("not run");
    if (stream) {
      result = host.stream(info.id, params, [json](const std::string& event) {
        if (json) {
          std::printf("{\"event\":%s}\n", event.c_str());
        } else {
          const auto e = boost::json::parse(event).as_object();
          if (e.at("type") == "text") std::fputs(std::string(e.at("text").as_string()).c_str(), stdout);
        }
        std::fflush(stdout);  // deltas are shown as they arrive
      });
    } else {
      result = host.complete(info.id, params);
    }
    if (!result) return fail(result.error());
    if (json) {
      std::printf("{\"result\":%s}\n", result->c_str());
    } else if (stream) {
      std::printf("\n");
    } else {
      std::printf("%s\n", provider_text(*result).c_str());
    }
    return static_cast<int>(k_exit_ok);
  });
}

int run_info(const std::string& dir, bool json, double timeout) {
  return with_plugin(dir, timeout, [&](Host& host, const ExtensionInfo& info) {
    auto r = host.info(info.id);
    if (!r) return fail(r.error());
    std::printf(json ? "{\"info\":%s}\n" : "%s\n", r->c_str());
    return static_cast<int>(k_exit_ok);
  });
}

// Every verb takes a plugin directory, --json and --timeout.
CLI::App* verb(CLI::App& app, const char* name, const char* what, std::string& dir, bool& json, const char* json_help,
               double& timeout, const char* timeout_default) {
  auto* sub = app.add_subcommand(name, what);
  sub->add_option("PLUGIN_DIR", dir, "Plugin directory (holds .synaps-plugin/plugin.json)")->required();
  sub->add_flag("--json", json, json_help);
  sub->add_option("--timeout", timeout, std::string("Deadline in seconds (default ") + timeout_default + ")");
  sub->add_option("--home", g_home, "exthost home (default $EXTHOST_HOME, else $XDG_DATA_HOME/exthost)");
  return sub;
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

  std::string command, params;
  std::vector<std::string> command_args;
  bool stream = false;

  auto* check = verb(app, "check", "Spawn and handshake a plugin's extension, report it, stop it.", dir, json,
                     "Print one JSON object on stdout", timeout, "10, the handshake");
  auto* call = verb(app, "call", "Call one tool of a plugin's extension and print its result.", dir, json,
                    "Print {\"result\": <the extension's result>} on stdout", timeout, "120");
  call->add_option("TOOL", tool, "Tool name, as the extension declares it")->required();
  call->add_option("INPUT_JSON", input, "Tool input as JSON (default {})");
  auto* invoke = verb(app, "invoke", "Run a plugin's slash command and print its output.", dir, json,
                      "Print JSON lines: {\"event\"} for each event, {\"notice\"}, then {\"result\"}", timeout, "120");
  invoke->add_option("COMMAND", command, "Command name")->required();
  invoke->add_option("ARGS", command_args, "Command arguments");
  auto* complete = verb(app, "complete", "Ask a plugin's model provider for one turn and print it.", dir, json,
                        "Print {\"result\"} (with --stream: an {\"event\"} line per event first)", timeout, "60");
  complete->add_option("PARAMS_JSON", params, "provider.complete params as JSON")->required();
  complete->add_flag("--stream", stream, "Use provider.stream and print text deltas as they arrive");
  auto* info_cmd = verb(app, "info", "Print what a plugin's info.get answers.", dir, json, "Print {\"info\": <answer>}",
                        timeout, "5");

  std::string project;
  auto* serve_cmd = app.add_subcommand(
      "serve", "Serve the host API as JSON-RPC 2.0 on stdin/stdout (Content-Length framing); see docs/serve.md.");
  serve_cmd->add_option("--home", g_home, "exthost home (default $EXTHOST_HOME, else $XDG_DATA_HOME/exthost)");
  serve_cmd->add_option("--project", project, "Project folder: discovery also searches <project>/.exthost/plugins");
  serve_cmd->add_option("--timeout", timeout, "Deadline in seconds for every extension method (default: per method)");

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
    if (invoke->parsed()) return run_invoke(dir, command, command_args, json, timeout);
    if (complete->parsed()) return run_complete(dir, params, stream, json, timeout);
    if (info_cmd->parsed()) return run_info(dir, json, timeout);
    if (serve_cmd->parsed()) {
      ServeOptions options;
      options.host = options_with_timeout(timeout);
      options.host.project_dir = project;
      return serve(options) == 0 ? k_exit_ok : k_exit_usage;
    }
  } catch (const std::exception& e) {
    std::cerr << "exthost: internal error: " << e.what() << "\n";
    return k_exit_internal;
  }
  return k_exit_usage;
}
