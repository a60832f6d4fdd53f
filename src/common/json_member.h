// Reading one member of a JSON object that another program wrote (a driver's state file,
// Slurm's or Podman's JSON, an identity provider's answer, gantryd's answer to the CLI).
//
// Thread-safety: free functions, no state.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>

namespace gantry {

// The string member `key` of `o`; "" when it is absent or not a string. `key` is one member
// name, not a dotted path (model::GetString reads paths): OIDC claim names may hold dots.
inline std::string StringMember(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace gantry
