#include "host/deferred_declarations.hpp"

#include <boost/json/serialize.hpp>
#include <set>

#include "util/text.hpp"

namespace exthost::host {
namespace json = boost::json;
namespace {

Error parse_error(const std::string& what) { return Error::manifest("Failed to parse extension manifest: " + what); }

Result<json::array> optional_array(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return json::array();
  if (!v->is_array()) return parse_error("invalid type for `deferred." + std::string(key) + "`, expected a sequence");
  return v->get_array();
}

bool valid_name(const json::value* v) {
  if (v == nullptr || !v->is_string()) return false;
  const auto s = v->get_string();
  if (s.empty() || s.size() > k_max_declared_name) return false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ':' || c == ' ' || c == '\t') return false;
  }
  return true;
}

bool valid_text(const json::value* v, std::size_t max, bool required) {
  if (v == nullptr || v->is_null()) return !required;
  if (!v->is_string()) return false;
  const auto s = v->get_string();
  return !util::trim(std::string_view(s.data(), s.size())).empty() && s.size() <= max;
}

bool valid_schema(const json::value* v) { return v != nullptr && v->is_object(); }
bool small_schema(const json::value* v) { return json::serialize(*v).size() <= k_max_declared_schema; }

const json::value* field(const json::value& item, std::string_view key) {
  const auto* o = item.if_object();
  return o ? o->if_contains(key) : nullptr;
}

std::optional<std::string> tools_reason(const json::array& tools) {
  if (tools.size() > k_max_declared_tools) return "too_many_declared_tools";
  std::set<std::string> names;
  for (const auto& t : tools) {
    if (!valid_name(field(t, "name"))) return "invalid_declared_tool_name";
    if (!valid_text(field(t, "description"), k_max_declared_description, true)) return "invalid_declared_tool_description";
    if (!valid_schema(field(t, "input_schema"))) return "declared_tool_schema_not_object";
    if (!small_schema(field(t, "input_schema"))) return "oversized_declared_tool_schema";
    if (!names.insert(std::string(field(t, "name")->get_string())).second) return "duplicate_declared_tool_name";
  }
  return std::nullopt;
}

std::optional<std::string> providers_reason(const json::array& providers) {
  if (providers.size() > k_max_declared_providers) return "too_many_declared_providers";
  std::set<std::string> ids;
  for (const auto& p : providers) {
    if (!valid_name(field(p, "id"))) return "invalid_declared_provider_id";
    if (!ids.insert(std::string(field(p, "id")->get_string())).second) return "duplicate_declared_provider_id";
    if (!valid_text(field(p, "display_name"), k_max_declared_display_name, true)) {
      return "invalid_declared_provider_display_name";
    }
    if (!valid_text(field(p, "description"), k_max_declared_description, true)) return "invalid_declared_provider_description";
    const auto* models = field(p, "models");
    if (models == nullptr || !models->is_array() || models->get_array().empty() ||
        models->get_array().size() > k_max_declared_models) {
      return "invalid_declared_provider_model_count";
    }
    std::set<std::string> model_ids;
    for (const auto& m : models->get_array()) {
      if (!valid_name(field(m, "id"))) return "invalid_declared_provider_model_id";
      if (!model_ids.insert(std::string(field(m, "id")->get_string())).second) return "duplicate_declared_provider_model_id";
      if (!valid_text(field(m, "display_name"), k_max_declared_display_name, false)) {
        return "invalid_declared_provider_model_display_name";
      }
      const auto* caps = field(m, "capabilities");
      if (caps != nullptr && !caps->is_null()) {
        if (!caps->is_object()) return "invalid_declared_provider_model_capabilities";
        for (const auto& [k, v] : caps->get_object()) {
          if (!v.is_bool()) return "invalid_declared_provider_model_capabilities";
        }
      }
    }
    const auto* config = field(p, "config_schema");
    if (config != nullptr && !config->is_null() && (!config->is_object() || !small_schema(config))) {
      return "invalid_declared_provider_config_schema";
    }
  }
  return std::nullopt;
}

std::optional<std::string> context_providers_reason(const json::array& items) {
  if (items.size() > k_max_declared_context_providers) return "too_many_declared_context_providers";
  std::set<std::string> ids;
  for (const auto& c : items) {
    if (!valid_name(field(c, "id"))) return "invalid_declared_context_provider_id";
    if (!ids.insert(std::string(field(c, "id")->get_string())).second) return "duplicate_declared_context_provider_id";
    if (!valid_name(field(c, "capability"))) return "invalid_declared_context_provider_capability";
    if (!valid_text(field(c, "description"), k_max_declared_description, true)) {
      return "invalid_declared_context_provider_description";
    }
    const auto* version = field(c, "schema_version");
    if (version == nullptr || !(version->is_uint64() || version->is_int64()) || version->to_number<std::int64_t>() < 1) {
      return "invalid_declared_context_provider_schema_version";
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<DeferredDeclarations>> parse_deferred(const json::object& root, const json::object& extension) {
  const auto* native = extension.if_contains("deferred");
  const bool has_native = native != nullptr && !native->is_null();
  const auto* activation = extension.if_contains("activation");
  const bool has_activation = activation != nullptr && !activation->is_null();
  if (has_activation) {
    const std::string a = activation->is_string() ? std::string(activation->get_string()) : json::serialize(*activation);
    if (a != "deferred") {
      return parse_error("unsupported extension activation '" + a +
                         "' (supported: \"deferred\"); refusing to fall back to the eager lifecycle");
    }
    if (has_native) {
      return parse_error(
          "extension declares both a native 'deferred' block and legacy 'tools'/'activation' aliases; use only the "
          "native 'deferred' block");
    }
    const auto* tools = root.if_contains("tools");
    if (tools == nullptr || !tools->is_array() || tools->get_array().empty()) {
      return parse_error(
          "extension declares activation \"deferred\" without legacy 'tools' declarations; declare tools or use the "
          "native 'deferred' block");
    }
    DeferredDeclarations d;
    d.tools = tools->get_array();
    d.from_legacy_aliases = true;
    return std::optional<DeferredDeclarations>(std::move(d));
  }
  if (!has_native) return std::optional<DeferredDeclarations>();
  const auto* block = native->if_object();
  if (block == nullptr) return parse_error("invalid type for `deferred`, expected struct DeferredDeclarations");
  DeferredDeclarations d;
  auto tools = optional_array(*block, "tools");
  if (!tools) return std::move(tools).error();
  d.tools = std::move(tools).value();
  auto providers = optional_array(*block, "providers");
  if (!providers) return std::move(providers).error();
  d.providers = std::move(providers).value();
  auto context = optional_array(*block, "context_providers");
  if (!context) return std::move(context).error();
  d.context_providers = std::move(context).value();
  if (const auto* lifecycle = block->if_contains("lifecycle"); lifecycle != nullptr && !lifecycle->is_null()) {
    if (*lifecycle == "hook") {
      d.lifecycle = DeferredLifecycle::hook;
    } else if (*lifecycle == "user") {
      d.lifecycle = DeferredLifecycle::user;
    } else {
      return parse_error("unknown variant `" +
                         (lifecycle->is_string() ? std::string(lifecycle->get_string()) : json::serialize(*lifecycle)) +
                         "`, expected `hook` or `user`");
    }
  }
  return std::optional<DeferredDeclarations>(std::move(d));
}

std::optional<std::string> deferred_invalid_reason(const DeferredDeclarations& d, const PermissionSet& granted,
                                                   bool has_hooks) {
  if (auto r = tools_reason(d.tools)) return r;
  if (auto r = providers_reason(d.providers)) return r;
  if (auto r = context_providers_reason(d.context_providers)) return r;
  const bool active = !d.tools.empty() || !d.providers.empty() || !d.context_providers.empty() || has_hooks;
  if (d.lifecycle == DeferredLifecycle::user && active) return "user_lifecycle_conflicts_with_active_capabilities";
  if (!d.tools.empty() && !granted.has(Permission::tools_register)) return "deferred_tools_require_tools_register_permission";
  if (!d.providers.empty() && !granted.has(Permission::providers_register)) {
    return "deferred_providers_require_providers_register_permission";
  }
  if (!d.context_providers.empty() && !granted.has(Permission::context_providers_register)) {
    return "deferred_context_providers_require_context_providers_register_permission";
  }
  if (d.lifecycle == DeferredLifecycle::hook && !has_hooks) return "hook_lifecycle_requires_hook_subscriptions";
  return std::nullopt;
}

}  // namespace exthost::host
