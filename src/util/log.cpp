#include "util/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace exthost::util {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("exthost")) return existing;
    auto created = std::make_shared<spdlog::logger>("exthost", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    // EXTHOST_LOG picks the level (trace, debug, info, warn, error, critical, off); warn by default.
    const char* level = std::getenv("EXTHOST_LOG");
    created->set_level(level != nullptr && *level != '\0' ? spdlog::level::from_str(level) : spdlog::level::warn);
    created->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    spdlog::register_logger(created);
    return created;
  }();
  return *logger;
}

}  // namespace exthost::util
