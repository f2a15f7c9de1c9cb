// host/capability.hpp — generic capability declarations of an initialize result (SPEC §5.7).
//
// The host never interprets a capability's kind or params; it checks that the extension
// holds every permission the capability says it needs.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "exthost/result.hpp"
#include "host/permission.hpp"

namespace exthost::host {

struct CapabilityDeclaration {
  std::string kind;                      // free-form, chosen by the plugin author
  std::string name;                      // display name
  std::vector<std::string> permissions;  // what it needs at runtime
  boost::json::value params;             // opaque; null when absent
};

// Decodes capabilities.capabilities[] (serde-style messages).
Result<std::vector<CapabilityDeclaration>> parse_capabilities(const boost::json::array& items);

// "capability 'kind' must be non-empty", "capability '<kind>' declares unknown permission
// '<p>'", "capability '<kind>' requires permission '<p>' but it is not granted".
Result<void> validate_capability(const CapabilityDeclaration& decl, const PermissionSet& granted);

}  // namespace exthost::host
