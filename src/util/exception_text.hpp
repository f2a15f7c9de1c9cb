// util/exception_text.hpp — what an exception_ptr says, for logs and errors at thread and
// coroutine boundaries (where nothing thrown may cross).
#pragma once

#include <exception>
#include <string>

namespace exthost::util {

inline std::string exception_text(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace exthost::util
