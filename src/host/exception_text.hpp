// host/exception_text.hpp — what an exception says, for an error message or the log.
#pragma once

#include <exception>
#include <string>

namespace exthost::host {

// The exception's what(), or "a non-standard exception" for anything else.
inline std::string exception_text(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

}  // namespace exthost::host
