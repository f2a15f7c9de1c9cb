#include "protocol/author.hpp"

#include <boost/json/object.hpp>
#include <random>

namespace exthost::protocol {
namespace {

std::string random_hex32() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int half = 0; half < 2; ++half) {
    std::uint64_t bits = rng();
    for (int i = 0; i < 16; ++i) {
      out[static_cast<std::size_t>(half * 16 + i)] = digits[bits & 0xF];
      bits >>= 4;
    }
  }
  return out;
}

bool well_formed(const std::string& s, std::string_view prefix) {
  if (s.size() != prefix.size() + 32 || s.compare(0, prefix.size(), prefix) != 0) return false;
  for (std::size_t i = prefix.size(); i < s.size(); ++i) {
    const char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Author Author::fresh() { return Author{"actor-" + random_hex32(), "group-" + random_hex32(), std::nullopt}; }

Author Author::child() const { return Author{"actor-" + random_hex32(), group, actor}; }

bool Author::valid() const {
  if (!well_formed(actor, "actor-") || !well_formed(group, "group-")) return false;
  if (parent && (!well_formed(*parent, "actor-") || *parent == actor)) return false;
  return true;
}

boost::json::value Author::to_json() const {
  boost::json::object o;
  o["actor"] = actor;
  o["group"] = group;
  if (parent) o["parent"] = *parent;
  return o;
}

std::optional<Author> Author::from_json(const boost::json::value& v) {
  const auto* o = v.if_object();
  if (o == nullptr) return std::nullopt;
  Author a;
  for (const auto& [key, value] : *o) {
    if (!value.is_string()) return std::nullopt;
    std::string s(value.get_string());
    if (key == "actor") {
      a.actor = std::move(s);
    } else if (key == "group") {
      a.group = std::move(s);
    } else if (key == "parent") {
      a.parent = std::move(s);
    } else {
      return std::nullopt;
    }
  }
  if (a.actor.empty() || a.group.empty()) return std::nullopt;
  return a;
}

}  // namespace exthost::protocol
