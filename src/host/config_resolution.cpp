#include "host/config_resolution.hpp"

#include "store/config_store.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace {

struct Found {
  ConfigSource source;
  std::optional<boost::json::value> value;
};

// The first source with a value, in the documented order. Error: a config file on the way
// exists but is refused (store::find_config_value's texts).
Result<Found> find_value(const std::string& id, const ConfigEntry& e, const ConfigSources& s) {
  auto env = [&](const std::string& name) -> std::optional<std::string> {
    return s.env ? s.env(name) : std::nullopt;
  };
  if (e.from_project_root) {
    // Trusted host state only: an environment variable or a file must never name it.
    if (s.project_root) return Found{{ConfigSourceKind::host_context, {}}, boost::json::value(*s.project_root)};
    return Found{{ConfigSourceKind::missing, {}}, std::nullopt};
  }
  for (const char* prefix : {"EXTHOST_", "SYNAPS_"}) {
    const std::string name = env_override_name(prefix, id, e.key);
    if (auto v = env(name)) return Found{{ConfigSourceKind::env_override, name}, boost::json::value(*v)};
  }
  if (e.secret_env) {
    if (auto v = env(*e.secret_env)) return Found{{ConfigSourceKind::secret_env, *e.secret_env}, boost::json::value(*v)};
  }
  // The plugin's store sits in the plugin's directory and exthost only ever renames a file
  // into place there, so a link in its place is not followed.
  auto own = store::find_config_value(s.plugin_config_file, e.key, util::Symlinks::refuse);
  if (!own) return std::move(own).error();
  if (*own) return Found{{ConfigSourceKind::plugin_config, {}}, boost::json::value(**own)};
  const std::string legacy = "extension." + id + "." + e.key;
  auto host = store::find_config_value(s.host_config_file, legacy);
  if (!host) return std::move(host).error();
  if (*host) return Found{{ConfigSourceKind::legacy_config_key, legacy}, boost::json::value(**host)};
  if (e.default_value) return Found{{ConfigSourceKind::default_value, {}}, *e.default_value};
  return Found{{ConfigSourceKind::missing, {}}, std::nullopt};
}

Result<void> validate_key(const std::string& id, const std::string& key) {
  const auto t = util::trim(key);
  if (t.empty()) return Error::manifest("Extension '" + id + "' declares config with empty key");
  if (key.find_first_of("./ ") != std::string::npos) {
    return Error::manifest("Extension '" + id + "' config key '" + key + "' must not contain dots, slashes, or spaces");
  }
  return {};
}

std::string shown(const boost::json::value& v) {
  if (const auto* s = v.if_string()) return std::string(*s);
  return wire::to_json(v);
}

}  // namespace

std::string env_override_name(std::string_view prefix, std::string_view id, std::string_view key) {
  std::string name(prefix);
  name += "EXTENSION_";
  auto append = [&](std::string_view part) {
    for (char c : part) {
      if (c == '-') c = '_';
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      name += c;
    }
  };
  append(id);
  name += '_';
  append(key);
  return name;
}

std::string_view to_string(ConfigSourceKind k) {
  switch (k) {
    case ConfigSourceKind::host_context: return "host_context";
    case ConfigSourceKind::env_override: return "env_override";
    case ConfigSourceKind::secret_env: return "secret_env";
    case ConfigSourceKind::plugin_config: return "plugin_config";
    case ConfigSourceKind::legacy_config_key: return "legacy_config_key";
    case ConfigSourceKind::default_value: return "default";
    case ConfigSourceKind::missing: return "missing";
  }
  return "missing";
}

Result<boost::json::object> resolve_config(const std::string& id, const std::vector<ConfigEntry>& entries,
                                           const ConfigSources& sources) {
  boost::json::object config;
  for (const auto& e : entries) {
    if (auto valid = validate_key(id, e.key); !valid) return std::move(valid).error();
    auto found = find_value(id, e, sources);
    if (!found) {
      return Error::manifest("Extension '" + id + "' cannot resolve config '" + e.key + "': " + found.error().message);
    }
    if (found->value) {
      config[e.key] = std::move(*found->value);
      continue;
    }
    if (!e.required) continue;
    const std::string config_key = "extension." + id + "." + e.key;
    const std::string hint = e.secret_env ? "set environment variable '" + *e.secret_env + "' or config key '" +
                                                config_key + "'"
                                          : "set config key '" + config_key + "'";
    return Error::manifest("Extension '" + id + "' missing required config '" + e.key + "': " + hint);
  }
  return config;
}

ConfigDiagnostics diagnose_config(const std::string& id, const std::vector<ConfigEntry>& entries,
                                  const ConfigSources& sources,
                                  const std::vector<std::pair<std::string, std::vector<std::string>>>& provider_required) {
  ConfigDiagnostics d;
  d.extension_id = id;
  for (const auto& e : entries) {
    auto found = find_value(id, e, sources);
    if (!found) {
      // Resolution would fail on this entry: no value, and the reason beside the entries.
      util::log().warn("extension '{}' config '{}': {}", id, e.key, found.error().message);
      d.file_errors.push_back(found.error().message);
      d.entries.push_back(ConfigEntryDiagnostic{e.key, e.description, e.required, {}, false, std::nullopt});
      continue;
    }
    ConfigEntryDiagnostic entry{e.key, e.description, e.required, found->source, found->value.has_value(), std::nullopt};
    if (found->value) {
      const std::string text = shown(*found->value);
      entry.display_value = e.secret_env ? redact_secret_value(text) : text;
    }
    d.entries.push_back(std::move(entry));
  }
  for (const auto& [provider, keys] : provider_required) {
    for (const auto& key : keys) {
      bool satisfied = false;
      for (const auto& entry : d.entries) satisfied = satisfied || (entry.key == key && entry.has_value);
      if (!satisfied) d.provider_missing.emplace_back(provider, key);
    }
  }
  return d;
}

std::string redact_secret_value(std::string_view value) {
  // Counted in characters, as the reference counts them.
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if ((static_cast<unsigned char>(value[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  const std::size_t n = starts.size();
  if (n == 0) return "";
  if (n <= 3) return "***";
  const std::size_t keep = n <= 7 ? 2 : 4;
  return "***" + std::string(value.substr(starts[n - keep]));
}

}  // namespace exthost::host
