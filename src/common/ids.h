// Identifiers: random RFC 4122 v4 UUIDs for metadata.uid.
// Thread-safety: safe from any thread (libsodium's randombytes is thread-safe).
#pragma once

#include <string>

namespace gantry {

// A new random UUID, lowercase, 36 characters.
std::string NewUid();

}  // namespace gantry
