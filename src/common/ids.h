// Identifiers: random RFC 4122 v4 UUIDs for metadata.uid.
// Thread-safety: safe from any thread: each thread draws from its own pool of bytes, filled
// by libsodium's randombytes (getrandom(2)) 16 identifiers at a time. A forked child that
// calls NewUid before exec would repeat its parent's next identifiers; gantryd's children
// exec at once.
#pragma once

#include <string>

namespace gantry {

// A new random UUID, lowercase, 36 characters.
std::string NewUid();

}  // namespace gantry
