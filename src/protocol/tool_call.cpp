#include "protocol/tool_call.hpp"

#include <boost/json/object.hpp>
#include <cstdlib>

#include "util/text.hpp"

namespace exthost::protocol {

std::string hook_cwd(const std::optional<std::filesystem::path>& cwd) {
  if (cwd) return cwd->string();
  std::error_code ec;
  auto here = std::filesystem::current_path(ec);
  return ec ? std::string(".") : here.string();
}

bool hook_session_id_enabled() {
  const char* value = std::getenv("EXTHOST_HOOK_SESSION_ID");
  if (value == nullptr) value = std::getenv("SYNAPS_HOOK_SESSION_ID");
  if (value == nullptr) return true;
  const std::string_view v = util::trim(value);
  return !(util::iequals_ascii(v, "0") || util::iequals_ascii(v, "false") || util::iequals_ascii(v, "off"));
}

boost::json::value tool_call_params(std::string_view name, boost::json::value input,
                                    const std::optional<std::string>& session_id,
                                    const std::optional<std::filesystem::path>& cwd, const std::optional<Author>& caller,
                                    bool session_id_enabled) {
  boost::json::object params;
  params["name"] = boost::json::string(name);
  params["input"] = std::move(input);
  if (session_id && session_id_enabled) {
    params["session_id"] = *session_id;
  } else {
    params["session_id"] = nullptr;
  }
  params["cwd"] = hook_cwd(cwd);
  if (caller && caller->valid()) params["caller"] = caller->to_json();
  return params;
}

}  // namespace exthost::protocol
