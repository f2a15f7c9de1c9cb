#include "host/disabled_plugins.hpp"

#include <string_view>

#include "store/config_store.hpp"
#include "util/text.hpp"

namespace exthost::host {

Result<std::vector<std::string>> read_disabled_plugins(const std::filesystem::path& host_config_file) {
  auto listed = store::find_config_value(host_config_file, "disabled_plugins");
  if (!listed) return std::move(listed).error();
  std::vector<std::string> out;
  if (!*listed) return out;
  std::string_view rest = **listed;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto item = util::trim(rest.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace exthost::host
