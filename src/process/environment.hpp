// process/environment.hpp — what reaches a child's environment (SPEC A5, §1.1).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace exthost::process {

// Exactly these host variables reach a child, when set; nothing else (no API keys, no
// agent sockets). Secrets reach an extension only inside initialize.params.config.
inline constexpr std::array<std::string_view, 5> k_environment_allowlist = {
    "PATH", "HOME", "LANG", "TERM", "XDG_RUNTIME_DIR"};

// The allowlisted variables of the host's own environment, as "NAME=value" strings.
std::vector<std::string> allowed_environment();

// Looks a bare program name up in the host's PATH. Returns an empty string when no
// executable file of that name is found.
std::string find_in_path(std::string_view name);

}  // namespace exthost::process
