// The exthost command: test a plugin, run its tools, hooks, commands and providers, look at
// every installed plugin, check a plugin against the protocol, or serve the host API.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "exit_codes.hpp"
#include "exthost/conformance.hpp"
#include "exthost/host.hpp"
#include "exthost/json_text.hpp"
#include "exthost/serve.hpp"
#include "exthost/version.hpp"
#include "json_numbers.hpp"
#include "open_line.hpp"
#include "progress.hpp"
#include "render.hpp"
#include "signals.hpp"
#include "style.hpp"

namespace {

using namespace exthost;
using namespace exthost::cli;

// `s` as a JSON string literal.
std::string json_string(std::string_view s) { return boost::json::serialize(boost::json::string_view(s.data(), s.size())); }

// --timeout's range: a millisecond at least, a day at most (a larger value would overflow
// the deadline arithmetic; zero, negative, infinite or NaN values are refused as usage errors).
constexpr double k_min_timeout_seconds = 0.001;
constexpr double k_max_timeout_seconds = 86400;

// --timeout's check: a number within the range above (NaN compares false to both bounds,
// so it is refused explicitly).
CLI::Validator timeout_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        try {
          v = std::stod(text);
        } catch (...) {
          return "not a number: " + text;
        }
        if (!(v >= k_min_timeout_seconds && v <= k_max_timeout_seconds)) {
          return "must be from " + std::to_string(k_min_timeout_seconds) + " to " +
                 std::to_string(static_cast<long>(k_max_timeout_seconds)) + " seconds, got " + text;
        }
        return {};
      },
      "SECONDS");
}

// What every verb shares.
struct Options {
  std::string dir;
  bool json = false;
  double timeout = 0;  // seconds; 0: each method's default
  std::string home;
  std::string project;
  std::vector<std::string> limits;  // KEY=VALUE, ResourceLimits' manifest keys
  ResourceLimits resource_limits;   // parsed from `limits`
  bool hooks_fail_closed = false;   // --hooks-fail-closed
};

// The process's signal watcher and the line stdout may leave open, both set up by main()
// before any verb runs.
SignalWatcher* g_signals = nullptr;
OpenLine* g_stdout_line = nullptr;

// Whether SIGINT, SIGTERM or SIGHUP has come: the verb then stops where it is, and main()
// reports the interruption instead of what the stop did to a call in flight.
bool interrupted() { return g_signals->received() != 0; }
int interrupted_exit() { return exit_code_for_signal(g_signals->received()); }

Style out_style() { return Style::for_stream(stdout); }

int fail(const Error& e) {
  if (interrupted()) return interrupted_exit();  // a call the stop cancelled: not the extension's fault
  const Style s = Style::for_stream(stderr);
  std::cerr << s.red("exthost: error:") << " " << e.message << "\n";
  return exit_code_for(e.kind);
}

// A failure of `method` on extension `id`: the message names both, as the reference's own
// texts mostly do already ("Extension 'x' method 'tool.call' timed out …").
int fail(const Error& e, const std::string& id, const std::string& method) {
  if (e.message.find("'" + id + "'") != std::string::npos && e.message.find(method) != std::string::npos) return fail(e);
  return fail(Error{e.kind, "extension '" + id + "' " + method + ": " + e.message});
}

HostOptions host_options(const Options& o) {
  HostOptions opts;
  opts.home = o.home;
  opts.project_dir = o.project;
  opts.limits = o.resource_limits;
  opts.hooks_fail_closed = o.hooks_fail_closed;
  if (o.timeout > 0) {
    const auto ms = std::chrono::milliseconds(static_cast<long long>(o.timeout * 1000));
    opts.tool_call_timeout = ms;
    opts.initialize_timeout = ms;
    opts.other_timeout = ms;
    opts.command_invoke_timeout = ms;
    opts.provider_timeout = ms;
    opts.quick_timeout = ms;
    opts.hook_timeout = ms;
  }
  return opts;
}

std::string health_text(const Style& s, Health h) {
  const std::string name(to_string(h));
  if (h == Health::running) return s.green(name);
  if (h == Health::degraded || h == Health::restarting) return s.yellow(name);
  return s.red(name);
}

void print_info(const ExtensionInfo& info) {
  const Style s = out_style();
  std::printf("plugin:     %s\n", s.bold(info.id).c_str());
  std::printf("health:     %s\n", health_text(s, info.health).c_str());
  std::printf("generation: %llu\n", static_cast<unsigned long long>(info.generation));
  std::printf("initialize: %.1f ms (spawn to answer)\n", info.init_ms);
  std::printf("limits:     %s\n", describe_limits(info.limits).c_str());
  std::printf("contained:  %s\n", info.contained_by_cgroup ? "its own control group (daemons included)" : "its process group");
  std::printf("calls:      %zu at once%s\n", info.concurrency,
              info.cancellation ? ", hears $/cancelRequest" : "");
  std::printf("tools:      %zu\n", info.tools.size());
  for (const auto& t : info.tools) {
    std::printf("  %-20s %s%s\n", t.name.c_str(), t.description.c_str(), t.idempotent ? " (idempotent)" : "");
  }
  if (!info.hooks.empty()) {
    std::printf("hooks:      %zu\n", info.hooks.size());
    for (const auto& h : info.hooks) {
      std::printf("  %s%s\n", h.kind.c_str(), h.tool ? (" (tool " + *h.tool + ")").c_str() : "");
    }
  }
  for (const auto& p : info.providers) {
    std::printf("provider:   %s (%zu models)\n", p.id.c_str(), p.models.size());
  }
}

// Loads the plugin, runs `op` on it (with the stop token the first signal requests, for
// its Host call), unloads it; errors exit with their code.
template <class Op>
int with_plugin(const Options& o, Op op) {
  Host host(host_options(o));
  Watch watch(*g_signals, host);
  if (interrupted()) return interrupted_exit();
  auto info = host.load(o.dir);
  if (interrupted()) {
    host.shutdown_all();  // a load the signal did not reach; a later signal still kills it
    return interrupted_exit();
  }
  if (!info) return fail(info.error());
  const int rc = [&] {
    Operation operation(*g_signals);
    return op(host, *info, operation.token());
  }();
  if (interrupted()) return interrupted_exit();  // the watcher stops it
  auto stopped = host.unload(info->id);
  if (rc == k_exit_ok && !stopped) return fail(stopped.error());
  return rc;
}

// Loads the one plugin given, or discovers every installed one; runs `op` on the host.
template <class Op>
int with_plugins(const Options& o, Op op) {
  Host host(host_options(o));
  Watch watch(*g_signals, host);
  if (interrupted()) return interrupted_exit();
  DiscoveryReport report;
  if (!o.dir.empty()) {
    auto info = host.load(o.dir);
    if (!info) return fail(info.error());
    report.loaded.push_back(info->id);
  } else {
    report = host.discover();
  }
  if (interrupted()) {
    host.shutdown_all();  // what loaded after the signal; a later signal still kills it
    return interrupted_exit();
  }
  const int rc = op(host, report);
  host.shutdown_all();
  return rc;
}

int run_check(const Options& o) {
  return with_plugin(o, [&](Host&, const ExtensionInfo& info, std::stop_token) {
    if (o.json) {
      std::printf("%s\n", to_json_text(info).c_str());
    } else {
      print_info(info);
    }
    return static_cast<int>(k_exit_ok);
  });
}

int run_call(const Options& o, const std::string& tool, const std::string& input) {
  return with_plugin(o, [&](Host& host, const ExtensionInfo& info, std::stop_token stop) {
    auto result = host.call_tool(info.id, tool, input, {}, stop);
    if (!result) return fail(result.error(), info.id, "tool.call");
    std::printf(o.json ? "{\"result\":%s}\n" : "%s\n", result->c_str());
    return static_cast<int>(k_exit_ok);
  });
}

int run_hook(const Options& o, const std::string& kind, const std::string& event) {
  return with_plugin(o, [&](Host& host, const ExtensionInfo& info, std::stop_token stop) {
    boost::system::error_code ec;
    auto parsed = boost::json::parse(event.empty() ? std::string("{}") : event, ec);
    if (ec || !parsed.is_object()) return fail(Error::usage("hook.handle: EVENT_JSON must be a JSON object"));
    if (!finite_numbers(parsed)) return fail(Error::usage("hook.handle: EVENT_JSON holds a number out of range"));
    parsed.as_object()["kind"] = kind;
    auto result = host.emit_hook(boost::json::serialize(parsed), stop);
    if (interrupted()) return interrupted_exit();  // a stopped handler's "continue" is no verdict
    if (!result) return fail(result.error(), info.id, "hook.handle");
    if (o.json) {
      std::printf("{\"result\":%s}\n", result->c_str());
      return static_cast<int>(k_exit_ok);
    }
    const Style s = out_style();
    const auto r = boost::json::parse(*result).as_object();
    const std::string action(r.at("action").as_string());
    std::string detail;
    for (const char* key : {"reason", "content", "message", "output", "phase"}) {
      if (r.contains(key)) detail = std::string(r.at(key).as_string());
    }
    if (r.contains("input")) detail = boost::json::serialize(r.at("input"));
    const std::string shown = action == "block" ? s.red(action) : action == "continue" ? s.green(action) : s.yellow(action);
    std::printf("%s%s\n", shown.c_str(), detail.empty() ? "" : (": " + detail).c_str());
    return static_cast<int>(k_exit_ok);
  });
}

int run_invoke(const Options& o, const std::string& command, const std::vector<std::string>& args) {
  return with_plugin(o, [&](Host& host, const ExtensionInfo& info, std::stop_token stop) {
    // Cancelled by a signal, a command returns what it had collected: every event kept is
    // printed (JSON lines), then {"cancelled": true} instead of the result.
    if (o.json) {  // JSON lines: every event as it is kept, the notice if any, then the result
      auto out = host.invoke_command(
          info.id, command, args,
          [](const std::string& e) {
            std::printf("{\"event\":%s}\n", e.c_str());
            std::fflush(stdout);
          },
          stop);
      if (!out) return fail(out.error(), info.id, "command.invoke");
      if (out->limit_notice) {
        std::printf("{\"notice\":%s,\"error\":%s}\n", json_string(*out->limit_notice).c_str(),
                    out->limit_notice_is_error ? "true" : "false");
      }
      if (out->cancelled) {
        std::printf("{\"cancelled\":true}\n");
        std::fflush(stdout);
        return exit_code_for(ErrorKind::cancelled);
      }
      std::printf("{\"result\":%s}\n", out->result_json.c_str());
      return static_cast<int>(k_exit_ok);
    }
    const Style s = out_style();
    Result<CommandOutput> out = Error::internal("not run");
    {
      TaskBoard board(*g_stdout_line, s.colour(), s);  // live bars only on a terminal
      out = host.invoke_command(
          info.id, command, args, [&board](const std::string& e) { board.show(e); }, stop);
    }
    if (!out) return fail(out.error(), info.id, "command.invoke");
    // Cancelled: what came before the signal is on screen already (the line is sealed).
    if (out->cancelled) return exit_code_for(ErrorKind::cancelled);
    if (out->limit_notice) {
      const Style err = Style::for_stream(out->limit_notice_is_error ? stderr : stdout);
      std::fprintf(out->limit_notice_is_error ? stderr : stdout, "%s\n", err.yellow(*out->limit_notice).c_str());
    }
    return static_cast<int>(k_exit_ok);
  });
}

int run_complete(const Options& o, const std::string& params, bool stream) {
  return with_plugin(o, [&](Host& host, const ExtensionInfo& info, std::stop_token stop) {
    Result<std::string> result = Error::internal("not run");
    if (stream) {
      result = host.stream(
          info.id, params,
          [&o](const std::string& event) {
            if (o.json) {
              std::printf("{\"event\":%s}\n", event.c_str());
            } else {
              const auto e = boost::json::parse(event).as_object();
              if (e.at("type") == "text") g_stdout_line->write(std::string(e.at("text").as_string()));
            }
            std::fflush(stdout);  // deltas are shown as they arrive
          },
          stop);
    } else {
      result = host.complete(info.id, params, stop);
    }
    if (!result) return fail(result.error(), info.id, stream ? "provider.stream" : "provider.complete");
    if (o.json) {
      std::printf("{\"result\":%s}\n", result->c_str());
    } else if (stream) {
      g_stdout_line->write("\n");
    } else {
      std::printf("%s\n", provider_text(*result).c_str());
    }
    return static_cast<int>(k_exit_ok);
  });
}

int run_info(const Options& o) {
  return with_plugin(o, [&](Host& host, const ExtensionInfo& info, std::stop_token stop) {
    auto r = host.info(info.id, stop);
    if (!r) return fail(r.error(), info.id, "info.get");
    std::printf(o.json ? "{\"info\":%s}\n" : "%s\n", r->c_str());
    return static_cast<int>(k_exit_ok);
  });
}

void print_failures(const DiscoveryReport& report) {
  const Style s = out_style();
  for (const auto& f : report.failed) {
    std::printf("%s %s: %s\n", s.red("failed").c_str(), f.plugin.c_str(), f.concise_message().c_str());
  }
}

int run_list(const Options& o) {
  return with_plugins(o, [&](Host& host, const DiscoveryReport& report) {
    const auto all = host.list();
    if (o.json) {
      std::string out = "{\"extensions\":[";
      for (std::size_t i = 0; i < all.size(); ++i) out += (i ? "," : "") + to_json_text(all[i]);
      out += "],\"failed\":[";
      for (std::size_t i = 0; i < report.failed.size(); ++i) out += (i ? "," : "") + to_json_text(report.failed[i]);
      std::printf("%s]}\n", out.c_str());
      return static_cast<int>(k_exit_ok);
    }
    boost::json::array rows;
    for (const auto& info : all) {
      rows.push_back(boost::json::array{info.id, std::string(to_string(info.health)), std::to_string(info.tools.size()),
                                        std::to_string(info.hooks.size()), std::to_string(info.providers.size())});
    }
    if (!all.empty()) {
      std::fputs(render_table(boost::json::object{{"headers", boost::json::array{"plugin", "health", "tools", "hooks",
                                                                                  "providers"}},
                                                  {"rows", rows}})
                     .c_str(),
                 stdout);
    } else {
      std::printf("no plugins under %s\n", (host.home() / "plugins").c_str());
    }
    print_failures(report);
    return report.failed.empty() ? static_cast<int>(k_exit_ok) : static_cast<int>(k_exit_extension);
  });
}

std::string health_json(Host& host, const std::string& id) {
  auto info = host.extension_info(id);
  auto life = host.lifecycle(id);
  std::string out = "{\"id\":" + json_string(id) + ",\"health\":" + json_string(to_string(info->health)) +
                    ",\"restart_count\":" + std::to_string(info->restart_count) + ",\"lifecycle\":";
  out += life ? "{\"generation\":" + std::to_string(life->generation) + ",\"health\":" +
                    json_string(to_string(life->health)) + "}"
              : std::string("null");
  return out + "}";
}

int run_health(const Options& o) {
  return with_plugins(o, [&](Host& host, const DiscoveryReport& report) {
    const Style s = out_style();
    if (o.json) {
      std::string out = "{\"extensions\":[";
      for (std::size_t i = 0; i < report.loaded.size(); ++i) out += (i ? "," : "") + health_json(host, report.loaded[i]);
      out += "],\"failed\":[";
      for (std::size_t i = 0; i < report.failed.size(); ++i) out += (i ? "," : "") + to_json_text(report.failed[i]);
      std::printf("%s]}\n", out.c_str());
    } else {
      for (const auto& id : report.loaded) {
        auto info = host.extension_info(id);
        std::printf("%s: %s (restarts %zu, generation %llu)\n", s.bold(id).c_str(), health_text(s, info->health).c_str(),
                    info->restart_count, static_cast<unsigned long long>(info->generation));
      }
      print_failures(report);
    }
    return report.failed.empty() ? static_cast<int>(k_exit_ok) : static_cast<int>(k_exit_extension);
  });
}

int run_stats(const Options& o) {
  return with_plugins(o, [&](Host& host, const DiscoveryReport& report) {
    if (o.json) {
      std::string out = "{\"extensions\":[";
      for (std::size_t i = 0; i < report.loaded.size(); ++i) {
        out += (i ? "," : "") + std::string("{\"id\":") + json_string(report.loaded[i]) +
               ",\"stats\":" + to_json_text(*host.stats(report.loaded[i])) + "}";
      }
      std::printf("%s]}\n", out.c_str());
      return static_cast<int>(k_exit_ok);
    }
    const Style s = out_style();
    for (const auto& id : report.loaded) {
      const auto st = *host.stats(id);
      std::printf("%s  %s\n", s.bold(id).c_str(), health_text(s, st.health).c_str());
      std::printf("  frames   in %llu (%llu bytes), out %llu (%llu bytes)\n", static_cast<unsigned long long>(st.frames_in),
                  static_cast<unsigned long long>(st.bytes_in), static_cast<unsigned long long>(st.frames_out),
                  static_cast<unsigned long long>(st.bytes_out));
      std::printf("  calls    ok %llu, application errors %llu, transport errors %llu, timeouts %llu, cancelled %llu\n",
                  static_cast<unsigned long long>(st.calls_ok), static_cast<unsigned long long>(st.calls_application_error),
                  static_cast<unsigned long long>(st.calls_transport_error),
                  static_cast<unsigned long long>(st.calls_timeout), static_cast<unsigned long long>(st.calls_cancelled));
      std::printf("  notices  delivered %llu, dropped %llu, late replies %llu, inbound requests %llu\n",
                  static_cast<unsigned long long>(st.notifications_delivered),
                  static_cast<unsigned long long>(st.notifications_dropped),
                  static_cast<unsigned long long>(st.late_replies), static_cast<unsigned long long>(st.inbound_requests));
      std::printf("  queues   peak %llu frames, %llu bytes; waited for the byte budget %llu times\n",
                  static_cast<unsigned long long>(st.queued_frames_peak),
                  static_cast<unsigned long long>(st.queued_bytes_peak),
                  static_cast<unsigned long long>(st.queue_budget_waits));
      std::printf("  restarts %llu, generation %llu\n", static_cast<unsigned long long>(st.restarts),
                  static_cast<unsigned long long>(st.generation));
      if (!st.last_exit.empty()) std::printf("  last exit: %s\n", st.last_exit.c_str());
    }
    return static_cast<int>(k_exit_ok);
  });
}

int run_conformance(const Options& o) {
  const auto step = o.timeout > 0 ? std::chrono::milliseconds(static_cast<long long>(o.timeout * 1000))
                                  : std::chrono::milliseconds(5000);
  StopPipe stop;
  ConformanceReport report;
  {
    Watch watch(*g_signals, stop.write_fd());
    report = check_conformance(o.dir, step, stop.read_fd());
  }
  if (interrupted()) return interrupted_exit();
  if (o.json) {
    boost::json::array checks;
    for (const auto& c : report.checks) {
      checks.push_back(boost::json::object{{"name", c.name}, {"what", c.what}, {"passed", c.passed}, {"detail", c.detail}});
    }
    std::printf("%s\n", boost::json::serialize(boost::json::object{{"plugin", report.plugin},
                                                                    {"passed", report.passed()},
                                                                    {"checks", std::move(checks)},
                                                                    {"stderr_tail", report.stderr_tail}})
                            .c_str());
  } else {
    const Style s = out_style();
    std::printf("conformance of %s\n", s.bold(report.plugin).c_str());
    for (const auto& c : report.checks) {
      std::printf("  %s  %-17s %s%s\n", c.passed ? s.green("pass").c_str() : s.red("FAIL").c_str(), c.name.c_str(),
                  c.what.c_str(), c.detail.empty() ? "" : (c.passed ? s.dim(" (" + c.detail + ")") : "\n        " + c.detail).c_str());
    }
    std::size_t passed = 0;
    for (const auto& c : report.checks) passed += c.passed ? 1 : 0;
    std::printf("%zu of %zu checks passed\n", passed, report.checks.size());
    if (!report.passed() && !report.stderr_tail.empty()) std::printf("stderr tail:\n%s\n", report.stderr_tail.c_str());
  }
  return report.passed() ? static_cast<int>(k_exit_ok) : static_cast<int>(k_exit_extension);
}

constexpr const char* k_limit_help =
    "Resource limit for every extension, KEY=VALUE, repeatable: address_space_mib, open_files, processes, "
    "cpu_seconds (a manifest may ask for less, never more)";
constexpr const char* k_hooks_fail_closed_help =
    "Every hook fails closed: a before_tool_call hook that does not answer in time, answers an error or whose "
    "extension is down blocks the call (as \"on_error\": \"block\" in its manifest)";
constexpr const char* k_home_help = "exthost home (default $EXTHOST_HOME, else $XDG_DATA_HOME/exthost)";

// A verb that takes a plugin directory (required or not), --json, --timeout and --home.
CLI::App* verb(CLI::App& app, const char* name, const char* what, Options& o, bool dir_required, const char* json_help,
               const char* timeout_default) {
  auto* sub = app.add_subcommand(name, what);
  auto* dir = sub->add_option("PLUGIN_DIR", o.dir,
                              dir_required ? "Plugin directory (holds .synaps-plugin/plugin.json)"
                                           : "Plugin directory; without one, every installed plugin");
  if (dir_required) dir->required();
  sub->add_flag("--json", o.json, json_help);
  sub->add_option("--timeout", o.timeout, std::string("Deadline in seconds (default ") + timeout_default + ")")
      ->check(timeout_range());
  sub->add_option("--home", o.home, k_home_help);
  if (!dir_required) sub->add_option("--project", o.project, "Project folder: also search <project>/.exthost/plugins");
  sub->add_option("--limit", o.limits, k_limit_help);
  return sub;
}

// Parses the arguments and runs the verb they name.
int run_verb(int argc, char** argv) {
  CLI::App app{"exthost — host AI-agent extensions (JSON-RPC 2.0 over stdio) and test them."};
  app.footer(std::string(k_exit_code_table) + "\nColour only on a terminal; NO_COLOR turns it off.");
  app.set_version_flag("--version", std::string(k_version));
  app.require_subcommand(1);

  Options o;
  std::string tool, input, kind, event, command, params;
  std::vector<std::string> command_args;
  bool stream = false;

  auto* check = verb(app, "check", "Spawn and handshake a plugin's extension, report it, stop it.", o, true,
                     "Print one JSON object on stdout", "10, the handshake");
  auto* call = verb(app, "call", "Call one tool of a plugin's extension and print its result.", o, true,
                    "Print {\"result\": <the extension's result>} on stdout", "120");
  call->add_option("TOOL", tool, "Tool name, as the extension declares it")->required();
  call->add_option("INPUT_JSON", input, "Tool input as JSON (default {})");
  call->add_flag("--hooks-fail-closed", o.hooks_fail_closed, k_hooks_fail_closed_help);
  auto* hook = verb(app, "hook", "Send one hook event to a plugin's extension and print its answer.", o, true,
                    "Print {\"result\": <HookResult>}", "5");
  hook->add_option("KIND", kind, "Hook kind: before_tool_call, after_tool_call, before_message, …")->required();
  hook->add_option("EVENT_JSON", event, "The rest of the event, e.g. {\"tool_name\":\"bash\",\"tool_input\":{…}}");
  hook->add_flag("--hooks-fail-closed", o.hooks_fail_closed, k_hooks_fail_closed_help);
  auto* invoke = verb(app, "invoke", "Run a plugin's slash command and print its output.", o, true,
                      "Print JSON lines: {\"event\"} for each event, {\"notice\"}, then {\"result\"}", "120");
  invoke->add_option("COMMAND", command, "Command name")->required();
  invoke->add_option("ARGS", command_args, "Command arguments");
  auto* complete = verb(app, "complete", "Ask a plugin's model provider for one turn and print it.", o, true,
                        "Print {\"result\"} (with --stream: an {\"event\"} line per event first)", "60");
  complete->add_option("PARAMS_JSON", params, "provider.complete params as JSON")->required();
  complete->add_flag("--stream", stream, "Use provider.stream and print text deltas as they arrive");
  auto* info_cmd = verb(app, "info", "Print what a plugin's info.get answers.", o, true, "Print {\"info\": <answer>}", "5");
  auto* list = verb(app, "list", "Load every installed plugin (or the one given) and list them.", o, false,
                    "Print {\"extensions\": [...], \"failed\": [...]}", "10 per plugin");
  auto* health = verb(app, "health", "Load plugins and print each one's health.", o, false,
                      "Print {\"extensions\": [{id, health, restart_count, lifecycle}], \"failed\"}", "10 per plugin");
  auto* stats = verb(app, "stats", "Load plugins and print each one's counters.", o, false,
                     "Print {\"extensions\": [{id, stats}]}", "10 per plugin");
  auto* conformance = verb(app, "conformance", "Check a plugin's extension against the protocol, check by check.", o,
                           true, "Print {plugin, passed, checks: [{name, what, passed, detail}], stderr_tail}",
                           "5 per step");
  conformance->remove_option(conformance->get_option("--limit"));  // it spawns through no host
  auto* serve_cmd = app.add_subcommand(
      "serve", "Serve the host API as JSON-RPC 2.0 on stdin/stdout (Content-Length framing); see docs/serve.md.");
  serve_cmd->add_option("--home", o.home, k_home_help);
  serve_cmd->add_option("--project", o.project, "Project folder: discovery also searches <project>/.exthost/plugins");
  serve_cmd->add_option("--timeout", o.timeout, "Deadline in seconds for every extension method (default: per method)")
      ->check(timeout_range());
  serve_cmd->add_option("--limit", o.limits, k_limit_help);
  serve_cmd->add_flag("--hooks-fail-closed", o.hooks_fail_closed, k_hooks_fail_closed_help);

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
  for (const auto& kv : o.limits) {
    if (auto set = set_limit(o.resource_limits, kv); !set) return fail(set.error());
  }
  try {
    if (check->parsed()) return run_check(o);
    if (call->parsed()) return run_call(o, tool, input);
    if (hook->parsed()) return run_hook(o, kind, event);
    if (invoke->parsed()) return run_invoke(o, command, command_args);
    if (complete->parsed()) return run_complete(o, params, stream);
    if (info_cmd->parsed()) return run_info(o);
    if (list->parsed()) return run_list(o);
    if (health->parsed()) return run_health(o);
    if (stats->parsed()) return run_stats(o);
    if (conformance->parsed()) return run_conformance(o);
    if (serve_cmd->parsed()) {
      StopPipe stop;
      ServeOptions options;
      options.host = host_options(o);
      options.stop_fd = stop.read_fd();
      Watch watch(*g_signals, stop.write_fd());
      return serve(options) == 0 ? k_exit_ok : k_exit_usage;
    }
  } catch (const std::exception& e) {
    std::cerr << "exthost: internal error: " << e.what() << "\n";
    return k_exit_internal;
  }
  return k_exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
  SignalWatcher::block_stop_signals();  // before any thread: every thread inherits the mask
  OpenLine stdout_line(stdout);
  SignalWatcher signals(stdout_line);
  g_signals = &signals;
  g_stdout_line = &stdout_line;
  const int rc = run_verb(argc, argv);
  if (const int signo = signals.received()) {
    std::cerr << "exthost: interrupted (" << signal_name(signo) << "); every extension "
              << (signals.killed() ? "killed" : "stopped") << "\n";
    return exit_code_for_signal(signo);
  }
  return rc;
}
