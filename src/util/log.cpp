#include "util/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace exthost::util {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("exthost")) return existing;
    auto created = std::make_shared<spdlog::logger>("exthost", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    created->set_level(spdlog::level::warn);
    created->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    spdlog::register_logger(created);
    return created;
  }();
  return *logger;
}

}  // namespace exthost::util
