// host/config_resolution.hpp — an extension's configuration, resolved before it is spawned
// (SPEC §5.4 in the code's order, §9 Q1/Q2; A1 adds the EXTHOST_ names).
//
// For each declared entry, the first source that has a value wins:
//   0. host_context "project_root": only the host's own project folder, never anything else;
//   1. EXTHOST_EXTENSION_<ID>_<KEY>, then SYNAPS_EXTENSION_<ID>_<KEY> ('-' → '_', upper case);
//   2. the variable the entry names in `secret_env`;
//   3. the plugin's config store, <home>/plugins/<id>/config;
//   4. the host config file's "extension.<id>.<key>";
//   5. the declared default;
// then a required entry without a value fails the load, and an optional one is omitted. A
// config file that exists but is refused (not a regular file, over
// store::k_max_config_file_bytes, a link in place of the plugin's own store) fails the
// resolution of the entry that reads it: the configuration is never guessed.
// Values from the environment and the files are strings. Resolved values live only in
// memory: they go to the extension inside initialize.params.config and nowhere else, and
// values of entries that declare `secret_env` are shown redacted.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::host {

// One `extension.config[]` entry of a manifest.
struct ConfigEntry {
  std::string key;
  std::optional<std::string> type;  // "string" | "bool" | "number" (documentation only)
  std::optional<std::string> description;
  bool required = false;
  std::optional<boost::json::value> default_value;
  std::optional<std::string> secret_env;
  bool from_project_root = false;  // host_context: "project_root"
};

// Reads one environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Where values come from.
struct ConfigSources {
  EnvLookup env;
  std::filesystem::path plugin_config_file;  // <home>/plugins/<id>/config
  std::filesystem::path host_config_file;    // <home>/config
  std::optional<std::string> project_root;   // the host's project folder, if it has one
};

// "SYNAPS_EXTENSION_MY_EXT_API_KEY" for prefix "SYNAPS_", id "my-ext", key "api-key".
std::string env_override_name(std::string_view prefix, std::string_view id, std::string_view key);

enum class ConfigSourceKind { host_context, env_override, secret_env, plugin_config, legacy_config_key, default_value, missing };
std::string_view to_string(ConfigSourceKind k);

struct ConfigSource {
  ConfigSourceKind kind = ConfigSourceKind::missing;
  std::string detail;  // the variable's name, or "extension.<id>.<key>"; empty otherwise
};

struct ConfigEntryDiagnostic {
  std::string key;
  std::optional<std::string> description;
  bool required = false;
  ConfigSource source;
  bool has_value = false;
  std::optional<std::string> display_value;  // redacted for secret entries
};

struct ConfigDiagnostics {
  std::string extension_id;
  std::vector<ConfigEntryDiagnostic> entries;
  // Keys a registered provider requires that no entry supplies: (provider id, key).
  std::vector<std::pair<std::string, std::string>> provider_missing;
  // Why a config file was refused, once per entry it left without a value.
  std::vector<std::string> file_errors;
};

// Both functions below block on the disk (they read the config files); they share no
// state, so any thread may call them.

// The object sent as initialize.params.config. Errors (kind manifest):
// "Extension '<id>' declares config with empty key",
// "Extension '<id>' config key '<key>' must not contain dots, slashes, or spaces",
// "Extension '<id>' missing required config '<key>': <hint>",
// "Extension '<id>' cannot resolve config '<key>': config io error: <file> is not a regular
// file (a FIFO)" (and the other refusals of store::find_config_value).
Result<boost::json::object> resolve_config(const std::string& id, const std::vector<ConfigEntry>& entries,
                                           const ConfigSources& sources);

// Where each entry's value comes from, without failing on missing values; an entry whose
// config file is refused has no value and the refusal is in `file_errors` (and logged).
ConfigDiagnostics diagnose_config(const std::string& id, const std::vector<ConfigEntry>& entries,
                                  const ConfigSources& sources,
                                  const std::vector<std::pair<std::string, std::vector<std::string>>>& provider_required);

// "" for "", "***" up to 3 characters, "***" + the last 2 up to 7, else "***" + the last 4.
std::string redact_secret_value(std::string_view value);

}  // namespace exthost::host
