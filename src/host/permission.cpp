#include "host/permission.hpp"

#include <array>
#include <utility>

namespace exthost::host {
namespace {

constexpr std::array<std::pair<Permission, std::string_view>, 15> k_names = {{
    {Permission::tools_intercept, "tools.intercept"},
    {Permission::tools_transform_output, "tools.transform_output"},
    {Permission::tools_override, "tools.override"},
    {Permission::privacy_llm_content, "privacy.llm_content"},
    {Permission::session_lifecycle, "session.lifecycle"},
    {Permission::tools_register, "tools.register"},
    {Permission::providers_register, "providers.register"},
    {Permission::context_providers_register, "context_providers.register"},
    {Permission::memory_read, "memory.read"},
    {Permission::memory_write, "memory.write"},
    {Permission::config_write, "config.write"},
    {Permission::config_subscribe, "config.subscribe"},
    {Permission::audio_input, "audio.input"},
    {Permission::audio_output, "audio.output"},
    {Permission::session_drive, "session.drive"},
}};

}  // namespace

std::string_view wire_name(Permission p) {
  for (const auto& [perm, name] : k_names) {
    if (perm == p) return name;
  }
  return "";
}

std::optional<Permission> parse_permission(std::string_view s) {
  for (const auto& [perm, name] : k_names) {
    if (name == s) return perm;
  }
  return std::nullopt;
}

bool is_reserved(Permission p) { return p == Permission::tools_override; }

bool is_capability_permission(Permission p) {
  switch (p) {
    case Permission::tools_register:
    case Permission::providers_register:
    case Permission::memory_read:
    case Permission::memory_write:
    case Permission::config_write:
    case Permission::config_subscribe:
    case Permission::audio_input:
    case Permission::audio_output:
    case Permission::context_providers_register:
      return true;
    default:
      return false;
  }
}

Permission required_permission(protocol::HookKind k) {
  switch (k) {
    case protocol::HookKind::before_tool_call:
    case protocol::HookKind::after_tool_call:
      return Permission::tools_intercept;
    case protocol::HookKind::before_message:
    case protocol::HookKind::on_message_complete:
    case protocol::HookKind::on_compaction:
      return Permission::privacy_llm_content;
    case protocol::HookKind::on_session_start:
    case protocol::HookKind::on_session_end:
      return Permission::session_lifecycle;
  }
  return Permission::session_lifecycle;
}

Result<PermissionSet> PermissionSet::try_from_strings(const std::vector<std::string>& names) {
  PermissionSet set;
  for (const auto& name : names) {
    const auto p = parse_permission(name);
    if (!p) return Error::manifest("Unknown extension permission: " + name);
    if (is_reserved(*p)) return Error::manifest("Reserved extension permission is not implemented yet: " + name);
    set.add(*p);
  }
  return set;
}

}  // namespace exthost::host
