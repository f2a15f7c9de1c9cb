// util/log.hpp — the library's logger. It writes to stderr only: stdout may carry frames
// (`exthost serve`), so nothing of the library's ever goes there.
#pragma once

#include <spdlog/logger.h>

namespace exthost::util {

// The "exthost" logger; created on first use with a stderr sink at level warn.
spdlog::logger& log();

}  // namespace exthost::util
