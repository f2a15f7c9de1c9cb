// host/deferred_declarations.hpp — a manifest's `deferred` block (SPEC §5.3.2, §6.18):
// what an extension declares it will register, so that a host could list it before
// spawning it. exthost validates and keeps these declarations (the manifest's first
// validation step); extensions that declare them still start eagerly at load.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "exthost/result.hpp"
#include "host/permission.hpp"

namespace exthost::host {

// Bounds on declarations (reference): a manifest is read before any process exists, so a
// hostile one must not make the host keep or index unbounded data.
inline constexpr std::size_t k_max_declared_tools = 256;
inline constexpr std::size_t k_max_declared_providers = 16;
inline constexpr std::size_t k_max_declared_models = 64;
inline constexpr std::size_t k_max_declared_context_providers = 8;
inline constexpr std::size_t k_max_declared_name = 128;
inline constexpr std::size_t k_max_declared_description = 1024;
inline constexpr std::size_t k_max_declared_display_name = 256;
inline constexpr std::size_t k_max_declared_schema = 64 * 1024;

enum class DeferredLifecycle { none, hook, user };

struct DeferredDeclarations {
  boost::json::array tools;              // [{name, description, input_schema}]
  boost::json::array providers;          // [{id, display_name, description, models, config_schema?}]
  boost::json::array context_providers;  // [{id, capability, description, schema_version}]
  DeferredLifecycle lifecycle = DeferredLifecycle::none;
  bool from_legacy_aliases = false;      // top-level `tools` + `activation: "deferred"`
};

// Reads the native block or the legacy aliases; nullopt when neither is present. Errors are
// the reference's parse texts (kind manifest, "Failed to parse extension manifest: …").
Result<std::optional<DeferredDeclarations>> parse_deferred(const boost::json::object& root,
                                                           const boost::json::object& extension);

// The reason code of the first invalid declaration, or nullopt when all hold. `granted` are
// the manifest's permissions (parsed leniently: unknown names are refused later), and
// `has_hooks` whether it subscribes to any hook.
std::optional<std::string> deferred_invalid_reason(const DeferredDeclarations& d, const PermissionSet& granted,
                                                   bool has_hooks);

}  // namespace exthost::host
