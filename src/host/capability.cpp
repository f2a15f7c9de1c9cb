#include "host/capability.hpp"

#include <boost/json/object.hpp>

#include "util/text.hpp"

namespace exthost::host {

Result<std::vector<CapabilityDeclaration>> parse_capabilities(const boost::json::array& items) {
  std::vector<CapabilityDeclaration> out;
  for (const auto& item : items) {
    const auto* o = item.if_object();
    if (o == nullptr) return Error::extension("invalid type: expected struct CapabilityDeclaration");
    CapabilityDeclaration d;
    for (auto [key, field] : {std::pair{"kind", &d.kind}, std::pair{"name", &d.name}}) {
      const auto* v = o->if_contains(key);
      if (v == nullptr) return Error::extension("missing field `" + std::string(key) + "`");
      if (!v->is_string()) return Error::extension("invalid type for `" + std::string(key) + "`, expected a string");
      *field = std::string(v->get_string());
    }
    if (const auto* perms = o->if_contains("permissions"); perms != nullptr && !perms->is_null()) {
      if (!perms->is_array()) return Error::extension("invalid type for `permissions`, expected a sequence");
      for (const auto& p : perms->get_array()) {
        if (!p.is_string()) return Error::extension("invalid type in `permissions`, expected a string");
        d.permissions.emplace_back(p.get_string());
      }
    }
    if (const auto* params = o->if_contains("params")) d.params = *params;
    out.push_back(std::move(d));
  }
  return out;
}

Result<void> validate_capability(const CapabilityDeclaration& decl, const PermissionSet& granted) {
  if (util::trim(decl.kind).empty()) return Error::extension("capability 'kind' must be non-empty");
  if (util::trim(decl.name).empty()) return Error::extension("capability 'name' must be non-empty");
  for (const auto& name : decl.permissions) {
    const auto p = parse_permission(name);  // a reserved name parses, then fails the grant check
    if (!p) return Error::extension("capability '" + decl.kind + "' declares unknown permission '" + name + "'");
    if (!granted.has(*p)) {
      return Error::extension("capability '" + decl.kind + "' requires permission '" + name + "' but it is not granted");
    }
  }
  return {};
}

}  // namespace exthost::host
