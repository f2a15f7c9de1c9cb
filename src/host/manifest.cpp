#include "host/manifest.hpp"

#include <boost/json/object.hpp>
#include <cerrno>

#include "host/limits_policy.hpp"
#include "util/bounded_file.hpp"
#include "util/text.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace fs = std::filesystem;

namespace {

Error parse_error(const std::string& what) { return Error::manifest("Failed to parse extension manifest: " + what); }

// The most of a value from the manifest an error text repeats.
constexpr std::size_t k_max_echoed_value = 64;

std::string echoed(std::string_view value) {
  if (value.size() <= k_max_echoed_value) return std::string(value);
  return std::string(util::utf8_prefix(value, k_max_echoed_value)) + "\xE2\x80\xA6";
}

Result<std::vector<std::string>> string_list(const boost::json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return out;
  const auto* arr = v->if_array();
  if (arr == nullptr) return parse_error("invalid type for `" + std::string(key) + "`, expected a sequence");
  for (const auto& item : *arr) {
    if (!item.is_string()) return parse_error("invalid type in `" + std::string(key) + "`, expected a string");
    out.emplace_back(item.get_string());
  }
  return out;
}

Result<std::vector<HookSubscription>> parse_hooks(const boost::json::object& ext, std::vector<std::string>& kinds_as_written) {
  std::vector<HookSubscription> out;
  const auto* v = ext.if_contains("hooks");
  if (v == nullptr || v->is_null()) return out;
  const auto* arr = v->if_array();
  if (arr == nullptr) return parse_error("invalid type for `hooks`, expected a sequence");
  for (const auto& item : *arr) {
    const auto* o = item.if_object();
    if (o == nullptr) return parse_error("invalid type in `hooks`, expected struct HookSubscription");
    const auto* hook = o->if_contains("hook");
    if (hook == nullptr) return parse_error("missing field `hook`");
    if (!hook->is_string()) return parse_error("invalid type for `hook`, expected a string");
    HookSubscription sub;
    kinds_as_written.emplace_back(hook->get_string());
    if (const auto* tool = o->if_contains("tool"); tool != nullptr && !tool->is_null()) {
      if (!tool->is_string()) return parse_error("invalid type for `tool`, expected a string");
      sub.tool = std::string(tool->get_string());
    }
    if (const auto* match = o->if_contains("match"); match != nullptr && !match->is_null()) {
      const auto* mo = match->if_object();
      if (mo == nullptr) return parse_error("invalid type for `match`, expected struct HookMatcher");
      for (const auto& [key, value] : *mo) {
        if (key == "input_contains") {
          if (!value.is_string()) return parse_error("invalid type for `input_contains`, expected a string");
          sub.input_contains = std::string(value.get_string());
        } else if (key == "input_equals") {
          sub.input_equals = value;
        } else {
          return parse_error("unknown field `" + std::string(key) + "`, expected `input_contains` or `input_equals`");
        }
      }
    }
    if (const auto* on_error = o->if_contains("on_error"); on_error != nullptr && !on_error->is_null()) {
      if (!on_error->is_string()) return parse_error("invalid type for `on_error`, expected a string");
      const std::string_view value = on_error->get_string();
      if (value == "block") {
        sub.on_error = HookOnError::block;
      } else if (value != "continue") {
        return parse_error("unknown variant `" + echoed(value) + "` for `on_error`, expected `continue` or `block`");
      }
    }
    out.push_back(std::move(sub));
  }
  return out;
}

Result<std::vector<ConfigEntry>> parse_config_entries(const boost::json::object& ext) {
  std::vector<ConfigEntry> out;
  const auto* v = ext.if_contains("config");
  if (v == nullptr || v->is_null()) return out;
  const auto* arr = v->if_array();
  if (arr == nullptr) return parse_error("invalid type for `config`, expected a sequence");
  auto optional_string = [](const boost::json::object& o, std::string_view key,
                            std::optional<std::string>& out_value) -> Result<void> {
    const auto* f = o.if_contains(key);
    if (f == nullptr || f->is_null()) return {};
    if (!f->is_string()) return parse_error("invalid type for `" + std::string(key) + "`, expected a string");
    out_value = std::string(f->get_string());
    return {};
  };
  for (const auto& item : *arr) {
    const auto* o = item.if_object();
    if (o == nullptr) return parse_error("invalid type in `config`, expected struct ExtensionConfigEntry");
    ConfigEntry e;
    const auto* key = o->if_contains("key");
    if (key == nullptr) return parse_error("missing field `key`");
    if (!key->is_string()) return parse_error("invalid type for `key`, expected a string");
    e.key = std::string(key->get_string());
    if (auto r = optional_string(*o, "type", e.type); !r) return std::move(r).error();
    if (e.type && *e.type != "string" && *e.type != "bool" && *e.type != "number") {
      return parse_error("unknown variant `" + *e.type + "`, expected one of `string`, `bool`, `number`");
    }
    if (auto r = optional_string(*o, "description", e.description); !r) return std::move(r).error();
    if (const auto* req = o->if_contains("required"); req != nullptr && !req->is_null()) {
      if (!req->is_bool()) return parse_error("invalid type for `required`, expected a boolean");
      e.required = req->get_bool();
    }
    if (const auto* d = o->if_contains("default"); d != nullptr && !d->is_null()) e.default_value = *d;
    if (auto r = optional_string(*o, "secret_env", e.secret_env); !r) return std::move(r).error();
    std::optional<std::string> host_context;
    if (auto r = optional_string(*o, "host_context", host_context); !r) return std::move(r).error();
    if (host_context && *host_context != "project_root") {
      return parse_error("unknown variant `" + *host_context + "`, expected `project_root`");
    }
    e.from_project_root = host_context.has_value();
    out.push_back(std::move(e));
  }
  return out;
}

bool valid_token_name(std::string_view t) {
  if (util::trim(t).empty()) return false;
  for (char c : t) {
    if (c == '.' || c == '/' || c == '\\' || c == ' ' || c == '\t' || c == '\n' || c == '\r') return false;
  }
  return true;
}

bool valid_hex_colour(std::string_view v) {
  if ((v.size() != 4 && v.size() != 7) || v.front() != '#') return false;
  for (char c : v.substr(1)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

}  // namespace

Result<std::optional<Manifest>> read_manifest(const fs::path& plugin_dir) {
  const fs::path path = plugin_dir / k_manifest_path;
  auto text = util::read_bounded_file(path, k_max_manifest_bytes);
  if (!text) return Error::manifest("Failed to read plugin manifest: " + text.error().message);
  if (!text->has_value()) return Error::manifest("Failed to read plugin manifest: " + util::os_error_text(ENOENT));
  wire::JsonParser parser;
  auto doc = parser.parse(**text);
  if (!doc) return Error::manifest("Invalid plugin manifest JSON: " + doc.error().message);
  const auto* root = doc->if_object();
  if (root == nullptr) return Error::manifest("Invalid plugin manifest JSON: expected an object");
  const auto* ext_value = root->if_contains("extension");
  if (ext_value == nullptr) return std::optional<Manifest>();
  const auto* ext = ext_value->if_object();
  if (ext == nullptr) return parse_error("invalid type: expected struct ExtensionManifest");

  Manifest m;
  m.plugin_dir = fs::absolute(plugin_dir).lexically_normal();
  m.id = m.plugin_dir.filename().string();
  if (m.id.empty()) m.id = m.plugin_dir.parent_path().filename().string();
  m.extension = *ext_value;

  if (const auto* v = ext->if_contains("protocol_version")) {
    if (v->is_uint64() && v->get_uint64() <= UINT32_MAX) {
      m.protocol_version = static_cast<std::uint32_t>(v->get_uint64());
    } else if (v->is_int64() && v->get_int64() >= 0 && v->get_int64() <= UINT32_MAX) {
      m.protocol_version = static_cast<std::uint32_t>(v->get_int64());
    } else {
      return parse_error("invalid type for `protocol_version`, expected u32");
    }
  }
  const auto* runtime = ext->if_contains("runtime");
  if (runtime == nullptr) return parse_error("missing field `runtime`");
  if (!runtime->is_string() || runtime->get_string() != "process") {
    const std::string shown = runtime->is_string() ? std::string(runtime->get_string()) : wire::to_json(*runtime);
    return parse_error("unknown variant `" + shown + "`, expected `process`");
  }
  m.runtime = "process";
  const auto* command = ext->if_contains("command");
  if (command == nullptr) return parse_error("missing field `command`");
  if (!command->is_string()) return parse_error("invalid type for `command`, expected a string");
  m.command = std::string(command->get_string());
  auto args = string_list(*ext, "args");
  if (!args) return std::move(args).error();
  m.args = std::move(args).value();
  auto perms = string_list(*ext, "permissions");
  if (!perms) return std::move(perms).error();
  m.permissions = std::move(perms).value();

  if (const auto* prebuilt = ext->if_contains("prebuilt"); prebuilt != nullptr && !prebuilt->is_null()) {
    const auto* po = prebuilt->if_object();
    if (po == nullptr) return parse_error("invalid type for `prebuilt`, expected a map");
    for (const auto& [triple, asset] : *po) {
      const auto* ao = asset.if_object();
      if (ao == nullptr) return parse_error("invalid type in `prebuilt`, expected struct PrebuiltAsset");
      std::string fields[2];
      const char* names[2] = {"url", "sha256"};
      for (int i = 0; i < 2; ++i) {
        const auto* f = ao->if_contains(names[i]);
        if (f == nullptr) return parse_error(std::string("missing field `") + names[i] + "`");
        if (!f->is_string()) return parse_error(std::string("invalid type for `") + names[i] + "`, expected a string");
        fields[i] = std::string(f->get_string());
      }
      m.prebuilt.emplace_back(std::string(triple), fields[0], fields[1]);
    }
  }
  auto deferred = parse_deferred(*root, *ext);
  if (!deferred) return std::move(deferred).error();
  m.deferred = std::move(deferred).value();

  auto limits = parse_limits_section(*ext);
  if (!limits) return std::move(limits).error();
  m.limits = limits.value();

  auto config = parse_config_entries(*ext);
  if (!config) return std::move(config).error();
  m.config = std::move(config).value();
  if (const auto* setup = ext->if_contains("setup"); setup != nullptr && setup->is_string()) {
    m.setup = std::string(setup->get_string());
  } else if (const auto* provides = root->if_contains("provides"); provides != nullptr && provides->is_object()) {
    const auto* sidecar = provides->get_object().if_contains("sidecar");
    if (sidecar != nullptr && sidecar->is_object()) {
      const auto* s = sidecar->get_object().if_contains("setup");
      if (s != nullptr && s->is_string()) m.setup = std::string(s->get_string());
    }
  }

  std::vector<std::string> kinds_as_written;
  auto hooks = parse_hooks(*ext, kinds_as_written);
  if (!hooks) return std::move(hooks).error();
  if (const auto* tokens = ext->if_contains("theme_tokens"); tokens != nullptr && !tokens->is_null()) {
    const auto* to = tokens->if_object();
    if (to == nullptr) return parse_error("invalid type for `theme_tokens`, expected a map");
    for (const auto& [key, value] : *to) {
      if (!value.is_string()) return parse_error("invalid type in `theme_tokens`, expected a string");
      m.theme_tokens.emplace_back(std::string(key), std::string(value.get_string()));
    }
  }

  // The reference's validation, in its order (SPEC §5.3.3).
  const std::string ext_name = "Extension '" + m.id + "'";
  if (m.deferred) {
    PermissionSet lenient;  // unknown names are refused at step 6
    for (const auto& name : m.permissions) {
      if (auto p = parse_permission(name)) lenient.add(*p);
    }
    if (auto reason = deferred_invalid_reason(*m.deferred, lenient, !kinds_as_written.empty())) {
      return Error::manifest(ext_name + " deferred declarations invalid: " + *reason);
    }
  }
  if (m.protocol_version != 1) {
    return Error::manifest(ext_name + " uses unsupported protocol_version " + std::to_string(m.protocol_version) +
                           " (supported: 1)");
  }
  if (util::trim(m.command).empty()) return Error::manifest(ext_name + " has empty command");
  bool has_capability = false;
  for (const auto& name : m.permissions) {
    if (auto p = parse_permission(name); p && is_capability_permission(*p)) has_capability = true;
  }
  if (kinds_as_written.empty() && !has_capability) {
    return Error::manifest(ext_name + " must subscribe to at least one hook or request a registration permission");
  }
  for (const auto& [token, colour] : m.theme_tokens) {
    if (!valid_token_name(token)) {
      return Error::manifest(ext_name + " theme token '" + token +
                             "' is invalid: token names must be non-empty and must not contain dots, slashes, or spaces");
    }
    if (!valid_hex_colour(util::trim(colour))) {
      return Error::manifest(ext_name + " theme token '" + token + "' has invalid color '" + colour +
                             "': expected '#rgb' or '#rrggbb' hex");
    }
  }
  auto granted = PermissionSet::try_from_strings(m.permissions);
  if (!granted) return std::move(granted).error();
  m.granted = granted.value();
  for (std::size_t i = 0; i < kinds_as_written.size(); ++i) {
    auto kind = protocol::parse_hook_kind(kinds_as_written[i]);
    if (!kind) return Error::manifest("Unknown hook kind: '" + kinds_as_written[i] + "' in extension '" + m.id + "'");
    HookSubscription& sub = (*hooks)[i];
    sub.kind = *kind;
    if (!m.granted.allows_hook(*kind)) {
      return Error::manifest(ext_name + " lacks permission '" + std::string(wire_name(required_permission(*kind))) +
                             "' required for hook '" + kinds_as_written[i] + "'");
    }
    const bool tool_hook = *kind == protocol::HookKind::before_tool_call || *kind == protocol::HookKind::after_tool_call;
    if (sub.tool && !tool_hook) {
      return Error::manifest(ext_name + " hook '" + kinds_as_written[i] + "' does not allow a tool filter");
    }
  }
  m.hooks = std::move(hooks).value();
  return std::optional<Manifest>(std::move(m));
}

std::string resolve_command(const Manifest& m) {
  const std::string command(util::trim(m.command));
  if (command.empty() || command.front() == '/') return command;
  if (command.find('/') == std::string::npos) return command;
  return (m.plugin_dir / command).lexically_normal().string();
}

std::vector<std::string> resolve_args(const Manifest& m) {
  std::error_code ec;
  const fs::path root = fs::canonical(m.plugin_dir, ec);
  std::vector<std::string> out;
  for (const auto& arg : m.args) {
    if (!ec && !arg.empty()) {
      std::error_code ec2;
      const fs::path candidate = fs::canonical(m.plugin_dir / arg, ec2);
      if (!ec2) {
        const auto rel = candidate.lexically_relative(root);
        if (!rel.empty() && *rel.begin() != "..") {
          out.push_back(candidate.string());
          continue;
        }
      }
    }
    out.push_back(arg);
  }
  return out;
}

}  // namespace exthost::host
