// host/provider_registry.hpp — the model providers of every loaded extension, namespaced
// by plugin (SPEC §5.6.3 "Registry").
//
// Threading: guarded by its own mutex; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"
#include "protocol/provider.hpp"

namespace exthost::host {

struct ProviderModelSummary {
  std::string runtime_id;  // "plugin:provider:model"
  std::string display_name;
  bool tool_use = false;   // capabilities.tool_use == true
  bool streaming = false;  // capabilities.streaming == true; false when absent
  std::optional<std::uint64_t> context_window;
  friend bool operator==(const ProviderModelSummary&, const ProviderModelSummary&) = default;
};

struct ProviderSummary {
  std::string runtime_id;  // "plugin:provider"
  std::string display_name;
  std::vector<ProviderModelSummary> models;
  friend bool operator==(const ProviderSummary&, const ProviderSummary&) = default;
};

struct ModelId {
  std::string plugin, provider, model;
};

class ProviderRegistry {
 public:
  // "provider '<plugin>:<provider>' is already registered" for a second registration.
  Result<void> register_provider(const std::string& plugin_id, const protocol::ProviderSpec& spec);
  // Removes every provider of that plugin, and only those.
  void unregister_plugin(const std::string& plugin_id);
  // Sorted by runtime id; `plugin_id` empty: all plugins.
  std::vector<ProviderSummary> summaries(const std::string& plugin_id = {}) const;
  // "plugin:provider:model": exactly three non-empty parts.
  static std::optional<ModelId> parse_model_id(std::string_view id);

 private:
  struct Entry {
    std::string plugin_id;
    ProviderSummary summary;
  };
  mutable std::mutex m_mutex;
  std::map<std::string, Entry> m_providers;  // by runtime id
};

}  // namespace exthost::host
