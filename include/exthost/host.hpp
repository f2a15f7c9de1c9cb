// exthost/host.hpp — the blocking host API: load plugins, call their tools, stop them.
//
// A Host owns one I/O thread on which every extension's pipes, timers and coroutines run;
// the methods below may be called from any thread and block until their work is done.
// Creating a Host ignores SIGPIPE process-wide (a write to a dead child must fail, not
// kill the host). Destroying it stops every extension (the full stop ladder), runs the
// callbacks already due and joins its threads: no child and no descendant in a child's
// group outlives it. Never destroy a Host from one of its own callbacks.
//
// Threads. None of your code runs on the I/O thread but HostOptions::env. An EventCallback
// or discovery progress given to a blocking method runs on the calling thread; Completion
// and watch_ui_events callbacks run on the Host's callback thread (one thread, in order);
// ProviderTools run on the Host's tool workers. Any of them may call the blocking methods.
// A blocking method called on the I/O thread itself would wait for itself: it fails at
// once with ErrorKind::internal (methods that only read state, watch_ui_events and
// kill_all simply run there).
//
// Nothing thrown crosses a thread: an exception inside an operation becomes
// Error::internal("Host::<method>: <what>"); methods without a Result log it and return an
// empty value. An exception from your callback is logged, and the next one runs.
//
// Cancellation. The methods that talk to an extension take an optional std::stop_token:
// requesting its stop (from any thread) ends the operation promptly with
// ErrorKind::cancelled ("<what> was cancelled"). The request in flight is abandoned as at
// its deadline: an extension that declared the `cancellation` capability receives
// "$/cancelRequest" for it, its late answer is dropped, and nothing counts it against the
// extension (no restart, no unresponsive). Loading, unloading and discovery are bounded by
// their own deadlines and take no token.
//
// JSON crosses this API as text, so no JSON library leaks into your build.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "exthost/health.hpp"
#include "exthost/limits.hpp"
#include "exthost/result.hpp"
#include "exthost/retry.hpp"

namespace exthost {

// Reads one environment variable (nullopt when unset). The host reads configuration
// overrides, secrets and switches through it; the default reads the process environment.
// It may run on the Host's I/O thread: keep it quick (a blocking Host method fails there).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

struct HostOptions {
  // The exthost home: installed plugins, the host config file, the memory database.
  // Empty: $EXTHOST_HOME, else $XDG_DATA_HOME/exthost, else ~/.local/share/exthost.
  std::filesystem::path home;
  // The project whose <project>/.exthost/plugins discovery also searches, and the value of
  // config entries declared `host_context: "project_root"`. Empty: none.
  std::filesystem::path project_dir;
  // Where configuration overrides and secrets are read; unset: the process environment.
  EnvLookup env;
  // Whether a before_tool_call hook's "confirm" lets the call go ahead. The host has no
  // interactive prompt, so by default a confirmation blocks (fails closed).
  bool auto_approve_confirmations = false;
  // Every hook subscription fails closed, as if its manifest said `"on_error": "block"`: a
  // before_tool_call hook that does not answer within hook_timeout, answers an error or an
  // invalid result, or whose extension is not running (or is suspended for not answering)
  // blocks the call, with a reason naming the extension. By default hooks fail open, as in
  // the reference, unless their subscription asks otherwise (docs/protocol.md, "Hooks").
  bool hooks_fail_closed = false;

  // tool.call's deadline (SPEC A2: 120 s).
  std::chrono::milliseconds tool_call_timeout{120'000};
  // initialize's deadline, at load and at restart (10 s).
  std::chrono::milliseconds initialize_timeout{10'000};
  // command.invoke's deadline (120 s).
  std::chrono::milliseconds command_invoke_timeout{120'000};
  // provider.complete's and provider.stream's deadline (60 s).
  std::chrono::milliseconds provider_timeout{60'000};
  // info.get, settings.editor.* and sidecar.spawn_args (5 s).
  std::chrono::milliseconds quick_timeout{5'000};
  // hook.handle's deadline, which is also how long an event waits for each hook (5 s).
  std::chrono::milliseconds hook_timeout{5'000};
  // Any other method's deadline (30 s).
  std::chrono::milliseconds other_timeout{30'000};
  // The stop ladder: the shutdown request's deadline, then the grace after SIGTERM.
  std::chrono::milliseconds shutdown_request_timeout{500};
  std::chrono::milliseconds shutdown_grace{500};

  // Which calls a restarted extension gets again (exthost/retry.hpp).
  RetryMode retry = RetryMode::safe;

  // The most any extension may run under (exthost/limits.hpp); unset fields: unlimited. A
  // manifest may ask for less; one that asks for more is refused at load.
  ResourceLimits limits;
};

struct ToolInfo {
  std::string name;          // as the extension declared it
  std::string runtime_name;  // "plugin:tool"
  std::string api_name;      // safe for model APIs: [A-Za-z0-9_-], unique, at most 128
  std::string description;
  std::string input_schema_json;      // compact JSON text, as declared
  std::string api_input_schema_json;  // the same with API-safe property names: show this one
                                      // to a model, and call the tool by its api_name
  bool idempotent = false;  // declared safe to run again: retried on a restarted child after a crash
};

struct ProviderModelInfo {
  std::string id;  // "plugin:provider:model"
  std::string display_name;
  bool tool_use = false;
  bool streaming = false;
  std::optional<std::uint64_t> context_window;
};

struct ProviderInfo {
  std::string id;  // "plugin:provider"
  std::string display_name;
  std::vector<ProviderModelInfo> models;
};

struct CapabilityInfo {
  std::string kind;
  std::string name;
};

struct HookInfo {
  std::string kind;                 // "before_tool_call", …
  std::optional<std::string> tool;  // the tool filter, if any
};

struct ExtensionInfo {
  std::string id;  // the plugin directory's name
  Health health = Health::failed;
  std::uint64_t generation = 0;  // of the child that answered initialize
  std::vector<ToolInfo> tools;
  std::vector<ProviderInfo> providers;
  std::vector<CapabilityInfo> capabilities;
  std::vector<HookInfo> hooks;
  std::size_t restart_count = 0;  // lifetime restarts of the child
  std::filesystem::path plugin_dir;
  std::optional<std::string> plugin_info_json;  // the info.get answer, when it gave one
  double init_ms = 0;  // spawn to the initialize answer
  ResourceLimits limits;  // what its children run under: the host's, lowered by the manifest
  // Whether a control group holds its child's whole subtree, daemons included (else its
  // process group only; see docs/protocol.md, "Containment").
  bool contained_by_cgroup = false;
  // What its initialize answer declared: requests it takes at once (capabilities.concurrency,
  // 1 unless declared) and whether it hears $/cancelRequest (capabilities.cancellation).
  std::size_t concurrency = 1;
  bool cancellation = false;
};

// The counters of one extension (SPEC A11), read without waiting for it.
struct ExtensionStats {
  std::uint64_t frames_in = 0, bytes_in = 0, frames_out = 0, bytes_out = 0;
  std::uint64_t notifications_delivered = 0, notifications_dropped = 0;
  std::uint64_t late_replies = 0, discarded_frames = 0, cancel_notifications = 0;
  std::uint64_t inbound_requests = 0, inbound_in_flight_peak = 0;
  // Notification frames parked for subscribers and their consumers: the high-water marks in
  // frames and in body bytes, and how often the reader waited for the per-extension byte
  // budget (8 MiB), holding the extension back.
  std::uint64_t queued_frames_peak = 0, queued_bytes_peak = 0, queue_budget_waits = 0;
  std::uint64_t calls_ok = 0, calls_application_error = 0, calls_transport_error = 0, calls_timeout = 0,
                calls_cancelled = 0;
  std::uint64_t restarts = 0;
  std::uint64_t generation = 0;
  Health health = Health::failed;
  std::string stderr_tail;
  // How the last child that ended did ("exited with status 1", "was killed by signal 24
  // (SIGXCPU): it reached its CPU-time limit of 1 s …"); empty while none has.
  std::string last_exit;
};

// One plugin discovery could not load, with what to do about it.
struct LoadFailure {
  std::string plugin;
  std::optional<std::filesystem::path> manifest_path;
  std::string reason;
  std::string hint;
  // "<reason> (manifest: <path>; hint: <hint>)", or without the manifest part.
  std::string concise_message() const;
};

// Discovery's progress, in order: started, then loaded or failed per plugin, then finished.
struct DiscoveryEvent {
  enum class Kind { started, loaded, failed, finished } kind = Kind::started;
  std::string plugin;                  // loaded, failed
  std::optional<LoadFailure> failure;  // failed
  std::size_t loaded = 0, failed = 0;  // running totals
};

struct DiscoveryReport {
  std::vector<std::string> loaded;
  std::vector<LoadFailure> failed;
};

// Where a tool call comes from: its conversation (none for a worker) and folder.
struct ToolCallContext {
  std::optional<std::string> session_id;
  std::optional<std::filesystem::path> cwd;
};

// Exact accounting of a command's output (see docs/protocol.md, "command.invoke").
struct OutputCounters {
  std::uint64_t produced_events = 0, produced_bytes = 0;
  std::uint64_t retained_events = 0, retained_bytes = 0;
  std::uint64_t truncated_events = 0, truncated_bytes = 0;
  std::uint64_t dropped_events = 0, dropped_bytes = 0, dropped_error_events = 0;
  bool saw_done = false;
};

struct CommandOutput {
  std::string result_json;               // the command's answer, verbatim
  std::vector<std::string> events_json;  // retained output and task events, in order
  OutputCounters counters;
  std::optional<std::string> limit_notice;  // set when output was cut or dropped
  bool limit_notice_is_error = false;       // some dropped events were errors
  // The caller cancelled the command: the output is what came before, result_json is empty.
  bool cancelled = false;
};

// Which tools a provider may run through complete_with_tools(), and how. Both receive the
// tool's name and its input as JSON text. Unset members deny: by default nothing runs.
// Both run on the Host's tool workers (a few threads), never on its I/O thread, so `run`
// may call the Host (call_tool is the obvious way to run a tool). An exception from
// `deny` denies the tool; one from `run` fails it.
struct ProviderTools {
  std::function<std::optional<std::string>(const std::string& name, const std::string& input_json)> deny;
  std::function<Result<std::string>(const std::string& name, const std::string& input_json)> run;
};

// Receives one event as JSON text. Given to a blocking method, it runs on the calling
// thread, in order, and every event is delivered before the method returns. A slow one
// holds back only its own call: past a small backlog, that extension waits for it.
using EventCallback = std::function<void(const std::string& event_json)>;

// The end of an operation started without waiting: called once, on the Host's callback
// thread (one thread for every Completion and UI watcher: hand long work elsewhere). It
// may call the blocking methods, but must not wait for another Completion, which would
// run on this same thread. <exthost/asio.hpp> turns these into awaitables.
template <class T>
using Completion = std::function<void(Result<T>)>;

class Host {
 public:
  explicit Host(HostOptions options = {});
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Reads <plugin_dir>/.synaps-plugin/plugin.json, spawns the extension with the plugin
  // directory as working directory and an allowlisted environment, and handshakes. Any
  // failure after the spawn stops the child before returning.
  Result<ExtensionInfo> load(const std::filesystem::path& plugin_dir);

  // Loads every plugin under <home>/plugins/ and <project>/.exthost/plugins/ (a project
  // plugin replaces a home plugin of the same name), in name order, reporting progress.
  // Plugins listed in the home config's `disabled_plugins` are skipped, and so are project
  // plugins when EXTHOST_DISABLE_PROJECT_PLUGINS is on. Runs once: later calls replay the
  // first report until shutdown_all(). `progress` runs on the calling thread. On a failure
  // inside the host: logged, and an empty report.
  DiscoveryReport discover(std::function<void(const DiscoveryEvent&)> progress = {});

  // Unloads `id` and loads it again from the same directory (a failed load leaves it unloaded).
  Result<ExtensionInfo> reload(const std::string& id);

  // Calls tool `tool` of extension `id` with `input_json` (a JSON text; "{}" when empty),
  // through the before_tool_call and after_tool_call hooks of every loaded extension.
  // Returns the tool's result (or a hook's replacement) as compact JSON text.
  Result<std::string> call_tool(const std::string& id, const std::string& tool, const std::string& input_json,
                                const ToolCallContext& context = {}, std::stop_token stop = {});
  // The same by runtime name ("plugin:tool") or API name ("plugin_tool").
  Result<std::string> call_named_tool(const std::string& name, const std::string& input_json,
                                      const ToolCallContext& context = {}, std::stop_token stop = {});

  // Sends one hook event (JSON text: {"kind": "before_tool_call", "tool_name": …}) to the
  // subscribed extensions in load order and returns the combined HookResult as JSON text
  // ({"action": "continue"}, {"action": "block", "reason": …}, …). on_session_end goes to
  // every subscriber at once.
  Result<std::string> emit_hook(const std::string& event_json, std::stop_token stop = {});

  // Runs slash command `command` with `args`; its output is collected under the invocation
  // budget while the command runs. Cancelled, it returns the output collected so far with
  // CommandOutput::cancelled set (and no result), not an error.
  Result<CommandOutput> invoke_command(const std::string& id, const std::string& command,
                                       const std::vector<std::string>& args, std::stop_token stop = {});
  // The same, handing each retained event (JSON text, as in CommandOutput::events_json) to
  // `on_event` as soon as it is kept, for a live display.
  Result<CommandOutput> invoke_command(const std::string& id, const std::string& command,
                                       const std::vector<std::string>& args, EventCallback on_event,
                                       std::stop_token stop = {});

  // One model turn through the extension's provider: provider.complete's params and result
  // as JSON text.
  Result<std::string> complete(const std::string& id, const std::string& params_json, std::stop_token stop = {});
  // A streamed turn: `on_event` gets each provider.stream.event ({"type": "text", …}) in
  // order; the result is the final aggregate.
  Result<std::string> stream(const std::string& id, const std::string& params_json, EventCallback on_event,
                             std::stop_token stop = {});
  // A turn in which the provider may ask for tools, up to `max_iterations` rounds.
  // `tools_requested`, when given, receives how many tools the provider asked for.
  Result<std::string> complete_with_tools(const std::string& id, const std::string& params_json, ProviderTools tools = {},
                                          std::size_t max_iterations = 8, std::uint32_t* tools_requested = nullptr,
                                          std::stop_token stop = {});

  // info.get, the settings editor and sidecar arguments: results as JSON text.
  Result<std::string> info(const std::string& id, std::stop_token stop = {});
  Result<std::string> settings_editor_open(const std::string& id, const std::string& category, const std::string& field,
                                           std::stop_token stop = {});
  Result<std::string> settings_editor_key(const std::string& id, const std::string& category, const std::string& field,
                                          const std::string& key, std::stop_token stop = {});
  Result<std::string> settings_editor_commit(const std::string& id, const std::string& category,
                                             const std::string& field, const std::string& value_json,
                                             std::stop_token stop = {});
  Result<std::string> sidecar_spawn_args(const std::string& id, std::stop_token stop = {});

  // Every widget.* and settings.editor.* notification of `id`, validated and typed
  // ({"method": "widget.upsert", …}), until the extension is unloaded, across restarts of
  // its child. `on_event` runs on the Host's callback thread, in order; a watcher more than
  // 64 events behind holds the extension's notifications back.
  Result<void> watch_ui_events(const std::string& id, EventCallback on_event);

  // Stops extension `id` (shutdown request, SIGTERM, grace, SIGKILL) and forgets it.
  Result<void> unload(const std::string& id);

  // The same operations without waiting: each returns at once and calls `done` later, on
  // the Host's callback thread. An operation already started runs to its end even if
  // `done` is dropped, unless its `stop` is requested.
  void load(const std::filesystem::path& plugin_dir, Completion<ExtensionInfo> done);
  void unload(const std::string& id, Completion<void> done);
  void call_named_tool(const std::string& name, const std::string& input_json, const ToolCallContext& context,
                       Completion<std::string> done, std::stop_token stop = {});
  void emit_hook(const std::string& event_json, Completion<std::string> done, std::stop_token stop = {});
  void invoke_command(const std::string& id, const std::string& command, const std::vector<std::string>& args,
                      Completion<CommandOutput> done, std::stop_token stop = {});
  void complete(const std::string& id, const std::string& params_json, Completion<std::string> done,
                std::stop_token stop = {});

  // Stops every extension in parallel, within one overall bound (then kills what is left).
  // Extensions still loading are stopped too: their load() fails at once rather than at
  // initialize's deadline, and a discover() under way loads no further plugin. On a failure
  // inside the host: logged.
  void shutdown_all();
  // Ends every extension at once: SIGKILL to each child's group (or control group),
  // including those still loading or on a stop ladder of shutdown_all() or unload(). Calls
  // in flight fail. Safe to call from any thread, also while shutdown_all() runs (the CLI's
  // second SIGINT).
  void kill_all();

  // A conversation begins: on_session_start reaches its subscribers (after discovery, so
  // they exist); what they inject is kept as that session's injection and returned, for
  // the embedder to append to the session's system prompt. On a failure inside the host:
  // logged, and nullopt.
  std::optional<std::string> session_start(const std::string& session_id);
  // The injection session_start() kept for `session_id`, if any.
  std::optional<std::string> session_injection(const std::string& session_id) const;
  // A conversation ends: on_session_end reaches every subscriber at once, with the
  // transcript (a JSON array, or empty for none), within 5 s in all; false when that ran
  // out. The session's injection is dropped either way. Error: a transcript that is not a
  // JSON array.
  Result<bool> session_end(const std::string& session_id, const std::string& transcript_json = {});

  // Observation. These only read state; a failure inside the host is logged and gives an
  // empty value (or an Error where there is a Result).
  // Every loaded extension, sorted by id, with current health and generation.
  std::vector<ExtensionInfo> list() const;
  std::optional<ExtensionInfo> extension_info(const std::string& id) const;
  // Every registered tool, sorted by runtime name.
  std::vector<ToolInfo> tools() const;
  // The counters of `id` (SPEC A11).
  Result<ExtensionStats> stats(const std::string& id) const;
  // Where each declared config entry of `id` gets its value, as JSON text; secret values
  // are redacted ("***" and the last characters).
  Result<std::string> config_report(const std::string& id) const;
  // The exthost home this host uses.
  std::filesystem::path home() const;

  // Non-blocking observation of what is actually serving (nullopt: unknown id, or contended).
  std::optional<Lifecycle> lifecycle(const std::string& id) const;
  // Coarse status for display.
  std::optional<Health> health(const std::string& id) const;
  // The last stderr lines of the extension's child (bounded), for error reports.
  std::string stderr_tail(const std::string& id) const;
  // The pid of the extension's current child, if one runs.
  std::optional<int> child_pid(const std::string& id) const;

  struct Impl;  // opaque: owns the I/O thread and the extensions

 private:
  std::unique_ptr<Impl> m_impl;
};

}  // namespace exthost
