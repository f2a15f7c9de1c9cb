#include "host/limits_policy.hpp"

#include <array>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <charconv>
#include <utility>

namespace exthost {
namespace {

using Field = std::optional<std::uint64_t> ResourceLimits::*;
constexpr std::array<std::pair<std::string_view, Field>, 4> k_fields = {{
    {"address_space_mib", &ResourceLimits::address_space_mib},
    {"open_files", &ResourceLimits::open_files},
    {"processes", &ResourceLimits::processes},
    {"cpu_seconds", &ResourceLimits::cpu_seconds},
}};

std::string range_text() { return "1 to " + std::to_string(k_max_limit_value); }

std::string known_keys() {
  std::string out;
  for (const auto& [name, field] : k_fields) out += (out.empty() ? "`" : ", `") + std::string(name) + "`";
  return out;
}

Field field_named(std::string_view key) {
  for (const auto& [name, field] : k_fields) {
    if (name == key) return field;
  }
  return nullptr;
}

}  // namespace

namespace host {

Result<ResourceLimits> parse_limits_section(const boost::json::object& ext) {
  ResourceLimits out;
  const auto* v = ext.if_contains("limits");
  if (v == nullptr || v->is_null()) return out;
  auto fail = [](const std::string& what) { return Error::manifest("Failed to parse extension manifest: " + what); };
  const auto* o = v->if_object();
  if (o == nullptr) return fail("invalid type for `limits`, expected a map");
  for (const auto& [key, value] : *o) {
    const Field field = field_named(key);
    if (field == nullptr) return fail("limits: unknown field `" + std::string(key) + "`, expected one of " + known_keys());
    std::uint64_t n = 0;
    if (value.is_uint64()) {
      n = value.get_uint64();
    } else if (value.is_int64() && value.get_int64() > 0) {
      n = static_cast<std::uint64_t>(value.get_int64());
    } else if (!value.is_int64()) {
      return fail("limits." + std::string(key) + ": expected an integer, got " +
                  (value.is_string() ? "a string" : value.is_double() ? "a fraction" : "another type"));
    }
    if (n < 1 || n > k_max_limit_value) {
      return fail("limits." + std::string(key) + ": " + (value.is_int64() ? std::to_string(value.get_int64()) : std::to_string(n)) +
                  " is out of range (" + range_text() + ")");
    }
    out.*field = n;
  }
  return out;
}

Result<ResourceLimits> effective_limits(const std::string& extension_id, const ResourceLimits& host,
                                        const ResourceLimits& asked) {
  ResourceLimits out = host;
  for (const auto& [name, field] : k_fields) {
    const auto& want = asked.*field;
    if (!want) continue;
    const auto& allowed = host.*field;
    if (allowed && *want > *allowed) {
      return Error::manifest("Extension '" + extension_id + "' manifest asks for limits." + std::string(name) + " = " +
                             std::to_string(*want) + ", above the host's limit of " + std::to_string(*allowed));
    }
    out.*field = want;
  }
  return out;
}

}  // namespace host

Result<void> validate_limits(const ResourceLimits& limits) {
  for (const auto& [name, field] : k_fields) {
    const auto& v = limits.*field;
    if (v && (*v < 1 || *v > k_max_limit_value)) {
      return Error::usage("limit " + std::string(name) + " = " + std::to_string(*v) + " is out of range (" + range_text() + ")");
    }
  }
  return Result<void>();
}

Result<void> set_limit(ResourceLimits& limits, const std::string& key_equals_value) {
  const auto eq = key_equals_value.find('=');
  const std::string key = key_equals_value.substr(0, eq);
  const Field field = field_named(key);
  if (eq == std::string::npos || field == nullptr) {
    return Error::usage("--limit expects KEY=VALUE with KEY one of " + known_keys() + ", got '" + key_equals_value + "'");
  }
  const std::string text = key_equals_value.substr(eq + 1);
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > k_max_limit_value) {
    return Error::usage("--limit " + key + ": '" + text + "' is not an integer in range (" + range_text() + ")");
  }
  limits.*field = n;
  return Result<void>();
}

}  // namespace exthost
