// host/disabled_plugins.hpp — the plugins the host config file turns off.
//
// `disabled_plugins = a, b` in <home>/config names plugin directories that discovery skips.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "exthost/result.hpp"

namespace exthost::host {

// The names listed, trimmed, empty items dropped; none when the file or the key is absent.
// Error: the file exists but is refused (store::find_config_value's "config io error: …"),
// so the caller cannot tell which plugins were meant to stay off. Blocks on the disk only;
// no shared state, so any thread may call it.
Result<std::vector<std::string>> read_disabled_plugins(const std::filesystem::path& host_config_file);

}  // namespace exthost::host
