#include "protocol/provider.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <set>

#include "protocol/id_segment.hpp"

namespace exthost::protocol {
namespace {

std::string trim(std::string_view s) {
  const auto* ws = " \t\n\r\f\v";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

Result<std::string> required_string(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return Error::extension("missing field `" + std::string(key) + "`");
  if (!v->is_string()) return Error::extension("invalid type for `" + std::string(key) + "`, expected a string");
  return std::string(v->get_string());
}

bool is_safe_provider_id(std::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  }
  return true;
}

std::optional<std::string> validate_provider(std::string_view ext, const ProviderSpec& p) {
  const std::string e = "Extension '" + std::string(ext) + "'";
  const std::string pid = trim(p.id);
  if (auto err = validate_id_segment(pid)) {
    if (err->kind == IdSegmentError::Kind::empty) return e + " registered provider with empty provider id";
    return e + " registered provider '" + pid + "' with invalid provider id: " + err->display();
  }
  if (!is_safe_provider_id(pid)) return e + " registered provider '" + pid + "' with invalid provider id";
  const std::string prefix = e + " registered provider '" + pid + "'";
  if (trim(p.display_name).empty()) return prefix + " with empty display_name";
  if (trim(p.description).empty()) return prefix + " with empty description";
  if (p.models.empty()) return prefix + " must declare at least one model";
  std::set<std::string> model_ids;
  for (const auto& m : p.models) {
    const std::string mid = trim(m.id);
    if (auto err = validate_id_segment(mid)) {
      using K = IdSegmentError::Kind;
      const std::string mp = prefix + " with invalid model id '" + mid + "': ";
      switch (err->kind) {
        case K::empty: return prefix + " with empty model id";
        case K::reserved: return mp + "'" + utf8_encode(err->character) + "' is reserved";
        case K::too_long: return mp + err->display();
        case K::whitespace: return mp + "must not contain whitespace";
        case K::control: return mp + "contains control character " + unicode_name(err->character);
      }
    }
    if (!model_ids.insert(mid).second) return prefix + " with duplicate model id '" + mid + "'";
  }
  if (p.config_schema && !p.config_schema->is_object()) {
    return prefix + " with invalid config_schema: config_schema must be a JSON object";
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<ProviderSpec>> parse_provider_specs(std::string_view extension_id, const boost::json::array& providers) {
  const std::string invalid = "Invalid initialize response from extension '" + std::string(extension_id) + "': ";
  std::vector<ProviderSpec> out;
  for (const auto& item : providers) {
    const auto* o = item.if_object();
    if (o == nullptr) return Error::extension(invalid + "invalid type: expected struct RegisteredProviderSpec");
    ProviderSpec p;
    for (auto [key, field] : {std::pair{"id", &p.id}, std::pair{"display_name", &p.display_name},
                              std::pair{"description", &p.description}}) {
      auto s = required_string(*o, key);
      if (!s) return Error::extension(invalid + s.error().message);
      *field = std::move(s).value();
    }
    if (const auto* models = o->if_contains("models"); models != nullptr && !models->is_null()) {
      const auto* arr = models->if_array();
      if (arr == nullptr) return Error::extension(invalid + "invalid type for `models`, expected a sequence");
      for (const auto& mv : *arr) {
        const auto* mo = mv.if_object();
        if (mo == nullptr) return Error::extension(invalid + "invalid type: expected struct RegisteredProviderModelSpec");
        ProviderModelSpec m;
        auto id = required_string(*mo, "id");
        if (!id) return Error::extension(invalid + id.error().message);
        m.id = std::move(id).value();
        if (const auto* dn = mo->if_contains("display_name"); dn != nullptr && !dn->is_null()) {
          if (!dn->is_string()) return Error::extension(invalid + "invalid type for `display_name`, expected a string");
          m.display_name = std::string(dn->get_string());
        }
        if (const auto* caps = mo->if_contains("capabilities")) m.capabilities = *caps;
        if (const auto* cw = mo->if_contains("context_window"); cw != nullptr && !cw->is_null()) {
          if (cw->is_uint64()) {
            m.context_window = cw->get_uint64();
          } else if (cw->is_int64() && cw->get_int64() >= 0) {
            m.context_window = static_cast<std::uint64_t>(cw->get_int64());
          } else {
            return Error::extension(invalid + "invalid type for `context_window`, expected u64");
          }
        }
        p.models.push_back(std::move(m));
      }
    }
    if (const auto* cs = o->if_contains("config_schema"); cs != nullptr && !cs->is_null()) p.config_schema = *cs;
    out.push_back(std::move(p));
  }
  for (const auto& p : out) {
    if (auto err = validate_provider(extension_id, p)) return Error::extension(std::move(*err));
  }
  return out;
}

Result<ProviderCompleteResult> parse_provider_result(std::string_view extension_id, std::string_view method,
                                                     const boost::json::value& v) {
  const std::string invalid = "Invalid " + std::string(method) + " response from extension '" +
                              std::string(extension_id) + "': ";
  const auto* o = v.if_object();
  if (o == nullptr) return Error::extension(invalid + "invalid type: expected struct ProviderCompleteResult");
  const auto* content = o->if_contains("content");
  if (content == nullptr) return Error::extension(invalid + "missing field `content`");
  if (!content->is_array()) return Error::extension(invalid + "invalid type for `content`, expected a sequence");
  ProviderCompleteResult r;
  r.content = content->get_array();
  if (const auto* sr = o->if_contains("stop_reason"); sr != nullptr && !sr->is_null()) {
    if (!sr->is_string()) return Error::extension(invalid + "invalid type for `stop_reason`, expected a string");
    r.stop_reason = std::string(sr->get_string());
  }
  if (const auto* u = o->if_contains("usage"); u != nullptr && !u->is_null()) r.usage = *u;
  return r;
}

boost::json::value to_json(const ProviderCompleteResult& r) {
  boost::json::object o;
  o["content"] = r.content;
  o["stop_reason"] = r.stop_reason ? boost::json::value(*r.stop_reason) : boost::json::value(nullptr);
  o["usage"] = r.usage ? *r.usage : boost::json::value(nullptr);
  return o;
}

Result<ProviderStreamEvent> parse_provider_stream_event(const boost::json::value& params) {
  const boost::json::value* inner = &params;
  if (const auto* p = params.if_object()) {
    if (const auto* e = p->if_contains("event")) inner = e;
  }
  const auto* o = inner->if_object();
  if (o == nullptr) return Error::extension("provider stream event must be a JSON object");
  const auto* type = o->if_contains("type");
  if (type == nullptr || !type->is_string()) return Error::extension("provider stream event missing type");
  const std::string t(type->get_string());
  auto delta = [o]() -> const boost::json::string* {
    for (const char* key : {"delta", "text"}) {
      if (const auto* v = o->if_contains(key)) return v->if_string();
    }
    return nullptr;
  };
  if (t == "text" || t == "thinking") {
    const auto* d = delta();
    if (d == nullptr) return Error::extension("provider stream " + t + " event missing 'delta' or 'text'");
    if (t == "text") return ProviderStreamEvent(stream_event::TextDelta{std::string(*d)});
    return ProviderStreamEvent(stream_event::ThinkingDelta{std::string(*d)});
  }
  if (t == "tool_use") {
    const auto* id = o->if_contains("id");
    if (id == nullptr || !id->is_string()) return Error::extension("provider stream tool_use missing id");
    if (id->get_string().empty()) return Error::extension("provider stream tool_use id must be non-empty");
    const auto* name = o->if_contains("name");
    if (name == nullptr || !name->is_string()) return Error::extension("provider stream tool_use missing name");
    if (name->get_string().empty()) return Error::extension("provider stream tool_use name must be non-empty");
    boost::json::value input = boost::json::object();
    if (const auto* in = o->if_contains("input")) {
      if (!in->is_object()) return Error::extension("provider stream tool_use input must be a JSON object");
      input = *in;
    }
    return ProviderStreamEvent(
        stream_event::ToolUse{std::string(id->get_string()), std::string(name->get_string()), std::move(input)});
  }
  if (t == "usage") {
    boost::json::object usage;  // the members but `type`, in their order (erase would reorder)
    for (const auto& [key, value] : *o) {
      if (key != "type") usage.emplace(key, value);
    }
    return ProviderStreamEvent(stream_event::Usage{std::move(usage)});
  }
  if (t == "error") {
    const auto* m = o->if_contains("message");
    if (m == nullptr || !m->is_string()) return Error::extension("provider stream error missing message");
    if (m->get_string().empty()) return Error::extension("provider stream error message must be non-empty");
    return ProviderStreamEvent(stream_event::Error{std::string(m->get_string())});
  }
  if (t == "done") return ProviderStreamEvent(stream_event::Done{});
  return Error::extension("unknown provider stream event type: " + t);
}

boost::json::value to_json(const ProviderStreamEvent& e) {
  boost::json::object o;
  if (const auto* t = std::get_if<stream_event::TextDelta>(&e)) {
    o["type"] = "text";
    o["text"] = t->text;
  } else if (const auto* th = std::get_if<stream_event::ThinkingDelta>(&e)) {
    o["type"] = "thinking";
    o["text"] = th->text;
  } else if (const auto* tu = std::get_if<stream_event::ToolUse>(&e)) {
    o["type"] = "tool_use";
    o["id"] = tu->id;
    o["name"] = tu->name;
    o["input"] = tu->input;
  } else if (const auto* u = std::get_if<stream_event::Usage>(&e)) {
    o["type"] = "usage";
    o["usage"] = u->usage;
  } else if (const auto* er = std::get_if<stream_event::Error>(&e)) {
    o["type"] = "error";
    o["message"] = er->message;
  } else {
    o["type"] = "done";
  }
  return o;
}

Result<std::vector<ProviderToolUse>> extract_provider_tool_uses(const boost::json::array& content) {
  std::vector<ProviderToolUse> out;
  for (const auto& block : content) {
    const auto* o = block.if_object();
    if (o == nullptr) continue;
    const auto* type = o->if_contains("type");
    if (type == nullptr || !type->is_string() || type->get_string() != "tool_use") continue;
    const auto* id = o->if_contains("id");
    if (id == nullptr || !id->is_string()) return Error::extension("provider tool_use missing id");
    const auto* name = o->if_contains("name");
    if (name == nullptr || !name->is_string()) return Error::extension("provider tool_use missing name");
    if (trim(id->get_string()).empty()) return Error::extension("provider tool_use id is empty");
    if (trim(name->get_string()).empty()) return Error::extension("provider tool_use name is empty");
    boost::json::value input = boost::json::object();
    if (const auto* in = o->if_contains("input")) input = *in;
    if (!input.is_object()) {
      return Error::extension("provider tool_use '" + std::string(id->get_string()) + "' input must be a JSON object");
    }
    out.push_back(ProviderToolUse{std::string(id->get_string()), std::string(name->get_string()), std::move(input)});
  }
  return out;
}

}  // namespace exthost::protocol
