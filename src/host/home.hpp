// host/home.hpp — the exthost home and what lives under it (A8).
//
//   <home>/plugins/<name>/   installed plugins (and each one's `config` store)
//   <home>/config            the host's own `key = value` config file
//   <home>/memory/memory.db  the memory records of every extension
#pragma once

#include <filesystem>

#include "host/config_resolution.hpp"

namespace exthost::host {

// $EXTHOST_HOME, else $XDG_DATA_HOME/exthost, else $HOME/.local/share/exthost (empty
// values count as unset); "./.exthost" when even HOME is unset.
std::filesystem::path resolve_home(const EnvLookup& env);

struct HomeLayout {
  std::filesystem::path root;
  std::filesystem::path plugins_dir() const { return root / "plugins"; }
  std::filesystem::path host_config_file() const { return root / "config"; }
  std::filesystem::path memory_db() const { return root / "memory" / "memory.db"; }
  std::filesystem::path plugin_config_file(const std::string& id) const { return plugins_dir() / id / "config"; }
};

// The host process's environment, as an EnvLookup.
EnvLookup process_env();

}  // namespace exthost::host
