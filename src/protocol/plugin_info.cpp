#include "protocol/plugin_info.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace exthost::protocol {
namespace {

// Small decoding helpers with serde-like messages; each returns an error text or nothing.
std::optional<std::string> get_string(const boost::json::object& o, std::string_view key, std::string& out, bool required) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || (!required && v->is_null())) {
    return required ? std::optional<std::string>("missing field `" + std::string(key) + "`") : std::nullopt;
  }
  if (!v->is_string()) return "invalid type for `" + std::string(key) + "`, expected a string";
  out = std::string(v->get_string());
  return std::nullopt;
}

std::optional<std::string> get_strings(const boost::json::object& o, std::string_view key, std::vector<std::string>& out) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_array()) return "invalid type for `" + std::string(key) + "`, expected a sequence";
  for (const auto& item : v->get_array()) {
    if (!item.is_string()) return "invalid type in `" + std::string(key) + "`, expected a string";
    out.emplace_back(item.get_string());
  }
  return std::nullopt;
}

const boost::json::array* get_array(const boost::json::object& o, std::string_view key, std::optional<std::string>& err) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (!v->is_array()) err = "invalid type for `" + std::string(key) + "`, expected a sequence";
  return v->if_array();
}

std::optional<std::string> decode(const boost::json::value& v, PluginInfo& info) {
  const auto* o = v.if_object();
  if (o == nullptr) return "invalid type: expected struct PluginInfo";
  if (const auto* b = o->if_contains("build"); b != nullptr && !b->is_null()) {
    const auto* bo = b->if_object();
    if (bo == nullptr) return "invalid type for `build`, expected struct PluginBuild";
    PluginBuild build;
    if (auto e = get_string(*bo, "backend", build.backend, true)) return e;
    if (auto e = get_strings(*bo, "features", build.features)) return e;
    if (auto e = get_string(*bo, "version", build.version, false)) return e;
    info.build = std::move(build);
  }
  std::optional<std::string> err;
  if (const auto* caps = get_array(*o, "capabilities", err)) {
    for (const auto& c : *caps) {
      const auto* co = c.if_object();
      if (co == nullptr) return "invalid type: expected struct PluginCapabilityInfo";
      PluginCapabilityInfo cap;
      if (auto e = get_string(*co, "kind", cap.kind, true)) return e;
      if (auto e = get_string(*co, "name", cap.name, true)) return e;
      if (auto e = get_strings(*co, "modes", cap.modes)) return e;
      info.capabilities.push_back(std::move(cap));
    }
  }
  if (err) return err;
  if (const auto* models = get_array(*o, "models", err)) {
    for (const auto& m : *models) {
      const auto* mo = m.if_object();
      if (mo == nullptr) return "invalid type: expected struct PluginModelInfo";
      PluginModelInfo model;
      if (auto e = get_string(*mo, "id", model.id, true)) return e;
      std::string dn;
      if (auto e = get_string(*mo, "display_name", dn, false)) return e;
      if (mo->contains("display_name") && !mo->at("display_name").is_null()) model.display_name = dn;
      if (const auto* inst = mo->if_contains("installed"); inst != nullptr && !inst->is_null()) {
        if (!inst->is_bool()) return "invalid type for `installed`, expected a boolean";
        model.installed = inst->get_bool();
      }
      info.models.push_back(std::move(model));
    }
  }
  return err;
}

}  // namespace

Result<PluginInfo> parse_plugin_info(std::string_view extension_id, const boost::json::value& v) {
  PluginInfo info;
  if (auto e = decode(v, info)) {
    return Error::extension("Invalid info.get response from extension '" + std::string(extension_id) + "': " + *e);
  }
  return info;
}

boost::json::value to_json(const PluginInfo& info) {
  boost::json::object o;
  if (info.build) {
    o["build"] = boost::json::object{{"backend", info.build->backend},
                                     {"features", boost::json::array(info.build->features.begin(), info.build->features.end())},
                                     {"version", info.build->version}};
  }
  boost::json::array caps;
  for (const auto& c : info.capabilities) {
    caps.push_back(boost::json::object{{"kind", c.kind}, {"name", c.name},
                                       {"modes", boost::json::array(c.modes.begin(), c.modes.end())}});
  }
  o["capabilities"] = std::move(caps);
  boost::json::array models;
  for (const auto& m : info.models) {
    boost::json::object mo{{"id", m.id}, {"installed", m.installed}};
    if (m.display_name) mo["display_name"] = *m.display_name;
    models.push_back(std::move(mo));
  }
  o["models"] = std::move(models);
  return o;
}

Result<SidecarSpawnArgs> parse_sidecar_spawn_args(std::string_view extension_id, const boost::json::value& v) {
  const std::string invalid = "Invalid sidecar.spawn_args response from extension '" + std::string(extension_id) + "': ";
  const auto* o = v.if_object();
  if (o == nullptr) return Error::extension(invalid + "invalid type: expected struct SidecarSpawnArgs");
  SidecarSpawnArgs out;
  if (auto e = get_strings(*o, "args", out.args)) return Error::extension(invalid + *e);
  std::string language;
  if (auto e = get_string(*o, "language", language, false)) return Error::extension(invalid + *e);
  if (o->contains("language") && !o->at("language").is_null()) out.language = language;
  return out;
}

}  // namespace exthost::protocol
