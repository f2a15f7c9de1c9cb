#include "host/tool_registry.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace exthost::host {

std::string sanitize_api_name(std::string_view name, std::size_t max_len) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty()) out = "field";
  if (out.size() > max_len) out.resize(max_len);
  return out;
}

std::string sanitize_property_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty()) out = "field";
  if (out.size() > k_max_api_property) out.resize(k_max_api_property);
  return out;
}

namespace {

// The API-safe name of each property of `properties`, unique within it.
std::vector<std::pair<std::string, std::string>> property_names(const boost::json::object& properties) {
  std::vector<std::pair<std::string, std::string>> names;  // (declared, api)
  std::set<std::string> taken;
  for (const auto& [declared, sub] : properties) {
    std::string api = sanitize_property_name(declared);
    for (unsigned n = 2; taken.count(api) != 0; ++n) {
      const std::string suffix = "_" + std::to_string(n);
      api = sanitize_property_name(declared).substr(0, k_max_api_property - suffix.size()) + suffix;
    }
    taken.insert(api);
    names.emplace_back(std::string(declared), std::move(api));
  }
  return names;
}

boost::json::value api_schema(const boost::json::value& schema) {
  const auto* o = schema.if_object();
  if (o == nullptr) return schema;
  boost::json::object out = *o;
  if (const auto* props = o->if_contains("properties"); props != nullptr && props->is_object()) {
    boost::json::object renamed;
    std::map<std::string, std::string> by_declared;
    for (auto& [declared, api] : property_names(props->get_object())) {
      renamed[api] = api_schema(props->get_object().at(declared));
      by_declared[declared] = api;
    }
    out["properties"] = std::move(renamed);
    if (const auto* req = o->if_contains("required"); req != nullptr && req->is_array()) {
      boost::json::array required;
      for (const auto& r : req->get_array()) {
        auto it = r.is_string() ? by_declared.find(std::string(r.get_string())) : by_declared.end();
        required.push_back(it == by_declared.end() ? r : boost::json::value(it->second));
      }
      out["required"] = std::move(required);
    }
  }
  if (const auto* items = o->if_contains("items")) out["items"] = api_schema(*items);
  return out;
}

}  // namespace

boost::json::value restore_input_names(const boost::json::value& schema, const boost::json::value& api_input) {
  const auto* so = schema.if_object();
  if (so == nullptr) return api_input;
  if (const auto* in = api_input.if_object()) {
    const auto* props = so->if_contains("properties");
    if (props == nullptr || !props->is_object()) return api_input;
    std::map<std::string, std::string> by_api;
    for (auto& [declared, api] : property_names(props->get_object())) by_api[api] = declared;
    boost::json::object out;
    for (const auto& [key, value] : *in) {
      auto it = by_api.find(std::string(key));
      if (it == by_api.end()) {
        out[key] = value;  // not described by the schema: passed through
      } else {
        out[it->second] = restore_input_names(props->get_object().at(it->second), value);
      }
    }
    return out;
  }
  if (const auto* arr = api_input.if_array()) {
    const auto* items = so->if_contains("items");
    if (items == nullptr) return api_input;
    boost::json::array out;
    for (const auto& item : *arr) out.push_back(restore_input_names(*items, item));
    return out;
  }
  return api_input;
}

void ToolRegistry::register_plugin(const std::string& plugin_id, const std::vector<protocol::ToolSpec>& tools) {
  std::erase_if(m_tools, [&](const RegisteredTool& t) { return t.plugin_id == plugin_id; });
  for (const auto& spec : tools) {
    m_tools.push_back(RegisteredTool{plugin_id, spec.name, plugin_id + ":" + spec.name, {}, spec.description,
                                     spec.input_schema, api_schema(spec.input_schema), spec.idempotent});
  }
  std::sort(m_tools.begin(), m_tools.end(),
            [](const RegisteredTool& a, const RegisteredTool& b) { return a.runtime_name < b.runtime_name; });
  assign_api_names();
}

void ToolRegistry::unregister_plugin(const std::string& plugin_id) {
  std::erase_if(m_tools, [&](const RegisteredTool& t) { return t.plugin_id == plugin_id; });
  assign_api_names();
}

void ToolRegistry::assign_api_names() {
  std::set<std::string> taken;
  for (auto& t : m_tools) {
    std::string name = sanitize_api_name(t.runtime_name);
    for (unsigned n = 2; taken.count(name) != 0; ++n) {
      const std::string suffix = "_" + std::to_string(n);
      name = sanitize_api_name(t.runtime_name, k_max_api_name - suffix.size()) + suffix;
    }
    taken.insert(name);
    t.api_name = std::move(name);
  }
}

std::optional<RegisteredTool> ToolRegistry::find(std::string_view name) const {
  for (const auto& t : m_tools) {
    if (t.runtime_name == name) return t;
  }
  for (const auto& t : m_tools) {
    if (t.api_name == name) return t;
  }
  return std::nullopt;
}

std::vector<RegisteredTool> ToolRegistry::tools_of(const std::string& plugin_id) const {
  std::vector<RegisteredTool> out;
  for (const auto& t : m_tools) {
    if (t.plugin_id == plugin_id) out.push_back(t);
  }
  return out;
}

}  // namespace exthost::host
