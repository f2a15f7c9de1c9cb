#include "host/home.hpp"

#include <cstdlib>

namespace exthost::host {

std::filesystem::path resolve_home(const EnvLookup& env) {
  auto get = [&](const char* name) -> std::optional<std::string> {
    auto v = env ? env(name) : std::nullopt;
    if (v && v->empty()) return std::nullopt;
    return v;
  };
  if (auto h = get("EXTHOST_HOME")) return *h;
  if (auto x = get("XDG_DATA_HOME")) return std::filesystem::path(*x) / "exthost";
  if (auto home = get("HOME")) return std::filesystem::path(*home) / ".local" / "share" / "exthost";
  return std::filesystem::path(".exthost");
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

}  // namespace exthost::host
