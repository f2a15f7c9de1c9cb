#include "protocol/initialize.hpp"

#include <boost/json/object.hpp>
#include <set>

#include "exthost/version.hpp"
#include "protocol/id_segment.hpp"
#include "util/text.hpp"

namespace exthost::protocol {
namespace {

std::string kind_name(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return std::string("boolean `") + (v.get_bool() ? "true" : "false") + "`";
    case boost::json::kind::int64: return "integer `" + std::to_string(v.get_int64()) + "`";
    case boost::json::kind::uint64: return "integer `" + std::to_string(v.get_uint64()) + "`";
    case boost::json::kind::double_: return "floating point `" + std::to_string(v.get_double()) + "`";
    case boost::json::kind::string: return "string " + util::debug_quote(v.get_string());
    case boost::json::kind::array: return "sequence";
    case boost::json::kind::object: return "map";
  }
  return "value";
}

std::string invalid_type(const boost::json::value& v, std::string_view expected) {
  return "invalid type: " + kind_name(v) + ", expected " + std::string(expected);
}

// Decoding errors of the result's shape, in serde's words.
Result<std::string> required_string(const boost::json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  if (v == nullptr) return Error::extension("missing field `" + std::string(field) + "`");
  if (!v->is_string()) return Error::extension(invalid_type(*v, "a string"));
  return std::string(v->get_string());
}

Result<std::vector<ToolSpec>> decode_tools(const boost::json::value& v) {
  const auto* arr = v.if_array();
  if (arr == nullptr) return Error::extension(invalid_type(v, "a sequence"));
  std::vector<ToolSpec> tools;
  for (const auto& item : *arr) {
    const auto* o = item.if_object();
    if (o == nullptr) return Error::extension(invalid_type(item, "struct RegisteredExtensionToolSpec"));
    auto name = required_string(*o, "name");
    if (!name) return std::move(name).error();
    auto description = required_string(*o, "description");
    if (!description) return std::move(description).error();
    const auto* schema = o->if_contains("input_schema");
    if (schema == nullptr) return Error::extension("missing field `input_schema`");
    bool idempotent = false;
    if (const auto* flag = o->if_contains("idempotent"); flag != nullptr && !flag->is_null()) {
      if (!flag->is_bool()) {
        return Error::extension("tool '" + std::string(name.value()) + "' `idempotent`: " +
                                invalid_type(*flag, "a boolean"));
      }
      idempotent = flag->get_bool();
    }
    tools.push_back(ToolSpec{std::move(name).value(), std::move(description).value(), *schema, idempotent});
  }
  return tools;
}

std::optional<std::string> validate_tools(std::string_view id, const std::vector<ToolSpec>& tools) {
  const std::string ext = "Extension '" + std::string(id) + "'";
  std::set<std::string, std::less<>> seen;
  for (const auto& tool : tools) {
    const std::string_view name = util::trim(tool.name);
    const std::string shown(name);
    if (auto err = validate_id_segment(name)) {
      using K = IdSegmentError::Kind;
      const std::string prefix = ext + " registered tool '" + shown + "' with invalid tool name: ";
      switch (err->kind) {
        case K::empty: return ext + " registered a tool with an empty tool name";
        case K::reserved: return prefix + "'" + utf8_encode(err->character) + "' is reserved";
        case K::too_long: return prefix + err->display();
        case K::whitespace: return prefix + "must not contain whitespace";
        case K::control: return prefix + "contains control character " + unicode_name(err->character);
      }
    }
    if (name.size() != tool.name.size()) {  // A9: no surrounding whitespace, so no trimming drift
      return ext + " registered tool '" + shown + "' with invalid tool name: must not have leading or trailing whitespace";
    }
    if (!seen.insert(shown).second) return ext + " registered duplicate tool name '" + shown + "'";
    if (util::trim(tool.description).empty()) {
      return ext + " registered tool '" + shown + "' with an empty description";
    }
    if (!tool.input_schema.is_object()) {
      return ext + " registered tool '" + shown +
             "' with invalid input_schema: input_schema must be a JSON object";
    }
  }
  return std::nullopt;
}

}  // namespace

boost::json::value initialize_params(std::string_view plugin_id, const std::optional<std::string>& plugin_root,
                                     const boost::json::value& config) {
  boost::json::object p;
  p["synaps_version"] = std::string(k_version);
  p["extension_protocol_version"] = k_protocol_version;
  p["plugin_id"] = boost::json::string(plugin_id);
  if (plugin_root) {
    p["plugin_root"] = *plugin_root;
  } else {
    p["plugin_root"] = nullptr;
  }
  p["config"] = config;
  p["host"] = "exthost";
  return p;
}

Result<InitializeResult> parse_initialize_result(std::string_view extension_id, const boost::json::value& v) {
  const std::string invalid = "Invalid initialize response from extension '" + std::string(extension_id) + "': ";
  const auto* o = v.if_object();
  if (o == nullptr) return Error::extension(invalid + invalid_type(v, "struct InitializeResult"));
  InitializeResult out;
  boost::json::array providers;
  const auto* version = o->if_contains("protocol_version");
  if (version == nullptr) return Error::extension(invalid + "missing field `protocol_version`");
  if (version->is_uint64() && version->get_uint64() <= UINT32_MAX) {
    out.protocol_version = static_cast<std::uint32_t>(version->get_uint64());
  } else if (version->is_int64() && version->get_int64() >= 0 && version->get_int64() <= UINT32_MAX) {
    out.protocol_version = static_cast<std::uint32_t>(version->get_int64());
  } else {
    return Error::extension(invalid + invalid_type(*version, "u32"));
  }
  if (const auto* caps_value = o->if_contains("capabilities")) {
    const auto* caps = caps_value->if_object();
    if (caps == nullptr) return Error::extension(invalid + invalid_type(*caps_value, "struct InitializeCapabilities"));
    if (const auto* tools = caps->if_contains("tools")) {
      auto decoded = decode_tools(*tools);
      if (!decoded) return Error::extension(invalid + decoded.error().message);
      out.tools = std::move(decoded).value();
    }
    for (const char* list : {"providers", "capabilities"}) {
      if (const auto* items = caps->if_contains(list)) {
        if (!items->is_array()) return Error::extension(invalid + invalid_type(*items, "a sequence"));
      }
    }
    if (const auto* p = caps->if_contains("providers")) providers = p->get_array();
    if (const auto* c = caps->if_contains("capabilities")) out.capabilities = c->get_array();
    if (const auto* cancel = caps->if_contains("cancellation")) {
      if (!cancel->is_bool()) {
        return Error::extension(invalid + "capabilities.cancellation must be a boolean, got " + kind_name(*cancel))
            .because(ErrorCause::protocol);
      }
      out.cancellation = cancel->get_bool();
    }
    // Present means declared: null is not "absent" (an extension that sends it has a bug to hear about).
    if (const auto* n = caps->if_contains("concurrency"); n != nullptr) {
      const bool whole = n->is_uint64() || n->is_int64();
      const std::int64_t value = n->is_uint64() ? (n->get_uint64() > k_max_concurrency ? -1 : static_cast<std::int64_t>(n->get_uint64()))
                                 : n->is_int64() ? n->get_int64()
                                                 : -1;
      if (!whole || value < 1 || value > static_cast<std::int64_t>(k_max_concurrency)) {
        return Error::extension(invalid + "capabilities.concurrency must be an integer from 1 to " +
                                std::to_string(k_max_concurrency) + ", got " + kind_name(*n)).because(ErrorCause::protocol);
      }
      out.concurrency = static_cast<std::size_t>(value);
      out.concurrency_declared = true;
    }
  }
  if (out.protocol_version != k_protocol_version) {
    return Error::extension("Extension '" + std::string(extension_id) + "' initialize returned unsupported protocol_version " +
                            std::to_string(out.protocol_version) + " (supported: " + std::to_string(k_protocol_version) + ")");
  }
  if (auto err = validate_tools(extension_id, out.tools)) return Error::extension(std::move(*err));
  auto specs = parse_provider_specs(extension_id, providers);
  if (!specs) return std::move(specs).error();
  out.providers = std::move(specs).value();
  return out;
}

}  // namespace exthost::protocol
