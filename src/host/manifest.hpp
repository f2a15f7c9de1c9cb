// host/manifest.hpp — a plugin's `.synaps-plugin/plugin.json` (SPEC §5.3), first slice:
// the `extension` block's process fields and permissions, with the reference's texts.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "exthost/limits.hpp"
#include "exthost/result.hpp"
#include "host/config_resolution.hpp"
#include "host/deferred_declarations.hpp"
#include "host/permission.hpp"
#include "protocol/hook.hpp"

namespace exthost::host {

// Where a plugin declares itself, relative to its directory.
inline constexpr const char* k_manifest_path = ".synaps-plugin/plugin.json";

// The largest manifest read: real ones are a few KiB; the cap bounds what a plugin
// directory can make the host hold.
inline constexpr std::size_t k_max_manifest_bytes = 1024 * 1024;

// What a hook's failure (no answer within the deadline, an error answer, an invalid result,
// the extension down) does to the event: `continue` passes it on as if the hook had answered
// continue (the reference's fail-open); `block` blocks a before_tool_call (fail-closed) and,
// on a kind that cannot block, is logged as an error.
enum class HookOnError { continue_chain, block };

// A hook subscription: which hook, optionally only for one tool, optionally only when the
// tool input matches (SPEC §5.1.4), and what its failure does (`on_error`, an exthost
// addition: "continue" by default, or "block").
struct HookSubscription {
  protocol::HookKind kind = protocol::HookKind::before_tool_call;
  std::optional<std::string> tool;
  std::optional<std::string> input_contains;
  std::optional<boost::json::value> input_equals;
  HookOnError on_error = HookOnError::continue_chain;
};

struct Manifest {
  std::string id;                  // the plugin directory's name
  std::filesystem::path plugin_dir;
  std::uint32_t protocol_version = 1;
  std::string runtime;             // "process"
  std::string command;             // as written
  std::vector<std::string> args;   // as written
  std::vector<std::string> permissions;  // as written
  PermissionSet granted;                  // validated
  std::vector<HookSubscription> hooks;    // validated against `granted`
  std::vector<std::pair<std::string, std::string>> theme_tokens;  // validated colours
  std::vector<ConfigEntry> config;        // declared entries; keys are checked at resolution
  std::optional<std::string> setup;       // extension.setup, else provides.sidecar.setup
  // Prebuilt binaries by host triple: (triple, url, sha256), both fields required.
  std::vector<std::tuple<std::string, std::string, std::string>> prebuilt;
  // Validated and kept; such an extension still starts at load.
  std::optional<DeferredDeclarations> deferred;
  ResourceLimits limits;           // `extension.limits`: what the extension asks to run under
  boost::json::value extension;    // the whole block, for the parts later layers read
};

// Reads and validates <dir>/.synaps-plugin/plugin.json. nullopt: the plugin declares no
// extension. Errors: "Failed to read plugin manifest: …" (missing, not a regular file, over
// k_max_manifest_bytes, unreadable), "Invalid plugin manifest JSON: …",
// "Failed to parse extension manifest: …", then the reference's validation in its order
// (SPEC §5.3.3 steps 1–7): deferred declarations, protocol version, empty command, nothing
// to do, theme tokens, permissions, hooks.
// Blocks on the disk only (never on a FIFO); no shared state, so any thread may call it.
Result<std::optional<Manifest>> read_manifest(const std::filesystem::path& plugin_dir);

// The program to run: absolute as is; a bare name stays bare (looked up in PATH at spawn);
// otherwise relative to the plugin directory.
std::string resolve_command(const Manifest& m);
// Each argument naming an existing path inside the plugin directory becomes that path,
// canonical and absolute; every other argument is unchanged.
std::vector<std::string> resolve_args(const Manifest& m);

}  // namespace exthost::host
