#include "host/provider_registry.hpp"

#include <boost/json/object.hpp>

namespace exthost::host {

Result<void> ProviderRegistry::register_provider(const std::string& plugin_id, const protocol::ProviderSpec& spec) {
  ProviderSummary summary{plugin_id + ":" + spec.id, spec.display_name, {}};
  for (const auto& m : spec.models) {
    const auto* caps = m.capabilities.if_object();
    auto flag = [caps](const char* key) {
      const auto* v = caps ? caps->if_contains(key) : nullptr;
      return v != nullptr && v->is_bool() && v->get_bool();
    };
    summary.models.push_back(ProviderModelSummary{summary.runtime_id + ":" + m.id, m.display_name.value_or(m.id),
                                                  flag("tool_use"), flag("streaming"), m.context_window});
  }
  std::lock_guard lock(m_mutex);
  if (m_providers.count(summary.runtime_id)) {
    return Error::extension("provider '" + summary.runtime_id + "' is already registered");
  }
  const std::string key = summary.runtime_id;
  m_providers.emplace(key, Entry{plugin_id, std::move(summary)});
  return {};
}

void ProviderRegistry::unregister_plugin(const std::string& plugin_id) {
  std::lock_guard lock(m_mutex);
  std::erase_if(m_providers, [&](const auto& kv) { return kv.second.plugin_id == plugin_id; });
}

std::vector<ProviderSummary> ProviderRegistry::summaries(const std::string& plugin_id) const {
  std::lock_guard lock(m_mutex);
  std::vector<ProviderSummary> out;
  for (const auto& [id, entry] : m_providers) {
    if (plugin_id.empty() || entry.plugin_id == plugin_id) out.push_back(entry.summary);
  }
  return out;
}

std::optional<ModelId> ProviderRegistry::parse_model_id(std::string_view id) {
  const auto a = id.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  const auto b = id.find(':', a + 1);
  if (b == std::string_view::npos || id.find(':', b + 1) != std::string_view::npos) return std::nullopt;
  ModelId m{std::string(id.substr(0, a)), std::string(id.substr(a + 1, b - a - 1)), std::string(id.substr(b + 1))};
  if (m.plugin.empty() || m.provider.empty() || m.model.empty()) return std::nullopt;
  return m;
}

}  // namespace exthost::host
