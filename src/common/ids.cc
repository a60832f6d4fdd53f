#include "common/ids.h"

#include <sodium.h>

#include <cstdio>

namespace gantry {

std::string NewUid() {
  unsigned char b[16];
  randombytes_buf(b, sizeof b);  // sodium_init() is not required for randombytes_buf.
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

}  // namespace gantry
