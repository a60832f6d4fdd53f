#include "common/ids.h"

#include <sodium.h>

#include <array>
#include <cstddef>

namespace gantry {

namespace {

// 16 random bytes. A thread's bytes come from one randombytes_buf call per 16 identifiers
// (a create asks for two: its object's and its audit record's), not a getrandom(2) each.
void RandomBytes16(unsigned char* out) {
  constexpr size_t kIds = 16;
  thread_local std::array<unsigned char, 16 * kIds> pool;
  thread_local size_t next = pool.size();
  if (next == pool.size()) {
    randombytes_buf(pool.data(), pool.size());  // sodium_init() is not required for it.
    next = 0;
  }
  for (size_t i = 0; i < 16; ++i) out[i] = pool[next + i];
  sodium_memzero(pool.data() + next, 16);  // a byte is handed out once
  next += 16;
}

}  // namespace

std::string NewUid() {
  unsigned char b[16];
  RandomBytes16(b);
  b[6] = (b[6] & 0x0f) | 0x40;  // version 4
  b[8] = (b[8] & 0x3f) | 0x80;  // variant 10
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(36, '-');
  size_t at = 0;
  for (size_t i = 0; i < 16; ++i) {
    if (at == 8 || at == 13 || at == 18 || at == 23) ++at;  // the dashes stay
    out[at++] = kHex[b[i] >> 4];
    out[at++] = kHex[b[i] & 0x0f];
  }
  return out;
}

}  // namespace gantry
