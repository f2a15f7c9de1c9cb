// exthost/version.hpp — the library's version, also sent as initialize's synaps_version.
#pragma once

#include <string_view>

namespace exthost {

inline constexpr std::string_view k_version = "0.1.0";

}  // namespace exthost
