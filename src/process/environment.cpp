#include "process/environment.hpp"

#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace exthost::process {

std::vector<std::string> allowed_environment() {
  std::vector<std::string> out;
  for (std::string_view name : k_environment_allowlist) {
    const std::string key(name);
    if (const char* value = std::getenv(key.c_str())) out.push_back(key + "=" + value);
  }
  return out;
}

std::string find_in_path(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const std::size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + std::string(name);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return {};
}

}  // namespace exthost::process
