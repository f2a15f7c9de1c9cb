// protocol/tool_call.hpp — the params of tool.call (SPEC §2.3) and the hook context helpers.
#pragma once

#include <boost/json/value.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/author.hpp"

namespace exthost::protocol {

// The folder a call runs in: the caller's, or the host process's current directory.
std::string hook_cwd(const std::optional<std::filesystem::path>& cwd);

// Whether hook events and tool calls carry the owning conversation id: false when
// EXTHOST_HOOK_SESSION_ID (else SYNAPS_HOOK_SESSION_ID) is 0, false or off (trimmed, any case).
bool hook_session_id_enabled();

// {name, input, session_id, cwd[, caller]}: session_id and cwd are always present (null when
// absent); caller is present only for a valid author, never null. `session_id_enabled` is
// the kill switch above.
boost::json::value tool_call_params(std::string_view name, boost::json::value input,
                                    const std::optional<std::string>& session_id,
                                    const std::optional<std::filesystem::path>& cwd, const std::optional<Author>& caller,
                                    bool session_id_enabled);

}  // namespace exthost::protocol
