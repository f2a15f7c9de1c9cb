// host/permission.hpp — what an extension may do (SPEC §5.2). Wire names match exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exthost/result.hpp"
#include "protocol/hook.hpp"

namespace exthost::host {

enum class Permission : std::uint8_t {
  tools_intercept,
  tools_transform_output,
  tools_override,  // reserved: refused in manifests
  privacy_llm_content,
  session_lifecycle,
  tools_register,
  providers_register,
  context_providers_register,
  memory_read,
  memory_write,
  config_write,
  config_subscribe,
  audio_input,
  audio_output,
  session_drive,
};

std::string_view wire_name(Permission p);
// Exact wire names only; nullopt for anything else.
std::optional<Permission> parse_permission(std::string_view s);
bool is_reserved(Permission p);
// Permissions that let an extension without hooks be useful (SPEC §5.3.3 step 4).
bool is_capability_permission(Permission p);
// The permission a hook subscription needs.
Permission required_permission(protocol::HookKind k);

class PermissionSet {
 public:
  // Strict: "Unknown extension permission: <p>", "Reserved extension permission is not
  // implemented yet: <p>".
  static Result<PermissionSet> try_from_strings(const std::vector<std::string>& names);
  bool has(Permission p) const { return (m_bits >> static_cast<unsigned>(p)) & 1U; }
  void add(Permission p) { m_bits |= 1U << static_cast<unsigned>(p); }
  bool allows_hook(protocol::HookKind k) const { return has(required_permission(k)); }

 private:
  std::uint32_t m_bits = 0;
};

}  // namespace exthost::host
