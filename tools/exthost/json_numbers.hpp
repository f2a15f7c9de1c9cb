// json_numbers.hpp — whether a value read from the command line can be written back as
// JSON: Boost.JSON reads a literal beyond the double range (1e999) as an infinity, which
// has no JSON form.
#pragma once

#include <boost/json/value.hpp>
#include <cmath>

namespace exthost::cli {

inline bool finite_numbers(const boost::json::value& v) {
  if (const double* d = v.if_double()) return std::isfinite(*d);
  if (const auto* a = v.if_array()) {
    for (const auto& item : *a) {
      if (!finite_numbers(item)) return false;
    }
  }
  if (const auto* o = v.if_object()) {
    for (const auto& [key, item] : *o) {
      if (!finite_numbers(item)) return false;
    }
  }
  return true;
}

}  // namespace exthost::cli
