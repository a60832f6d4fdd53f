// Debian's Abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0),
// which does not convert from std::string_view. Sv() bridges the two explicitly.
//
// Thread-safety: inline free functions, no state.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace gantry {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view StdSv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace gantry
