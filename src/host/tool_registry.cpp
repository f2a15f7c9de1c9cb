#include "host/tool_registry.hpp"

#include <algorithm>
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

void ToolRegistry::register_plugin(const std::string& plugin_id, const std::vector<protocol::ToolSpec>& tools) {
  std::erase_if(m_tools, [&](const RegisteredTool& t) { return t.plugin_id == plugin_id; });
  for (const auto& spec : tools) {
    m_tools.push_back(RegisteredTool{plugin_id, spec.name, plugin_id + ":" + spec.name, {}, spec.description,
                                     spec.input_schema});
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
