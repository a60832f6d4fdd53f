#include "auth/credentials.h"

#include <sodium.h>

#include <ctime>

#include "common/errors.h"

namespace gantry::auth {
namespace {

void InitSodium() {
  static const bool ok = sodium_init() >= 0;
  (void)ok;
}

}  // namespace

std::string Base64Url(const unsigned char* data, size_t len) {
  std::string out(sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.find('\0'));
  return out;
}

absl::StatusOr<std::string> HashPassword(std::string_view password) {
  InitSodium();
  if (password.size() < kMinPasswordLength)
    return BadRequestError("the password must be at least " + std::to_string(kMinPasswordLength) +
                           " characters long");
  if (password.size() > kMaxPasswordLength)
    return BadRequestError("the password must be at most " + std::to_string(kMaxPasswordLength) +
                           " bytes long");
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(out, password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
    return absl::ResourceExhaustedError("out of memory while hashing a password");
  return std::string(out);
}

bool VerifyPassword(std::string_view password, std::string_view hash) {
  InitSodium();
  if (password.size() > kMaxPasswordLength || hash.empty() || hash.size() >= crypto_pwhash_STRBYTES)
    return false;
  std::string h(hash);  // NUL-terminated copy
  return crypto_pwhash_str_verify(h.c_str(), password.data(), password.size()) == 0;
}

std::string GeneratePassword() {
  InitSodium();
  unsigned char raw[18];
  randombytes_buf(raw, sizeof raw);
  return Base64Url(raw, sizeof raw);
}

std::string NewSecret(std::string_view prefix) {
  InitSodium();
  unsigned char raw[32];
  randombytes_buf(raw, sizeof raw);
  return std::string(prefix) + Base64Url(raw, sizeof raw);
}

std::string HashSecret(std::string_view secret) {
  InitSodium();
  unsigned char h[crypto_generichash_BYTES];
  crypto_generichash(h, sizeof h, reinterpret_cast<const unsigned char*>(secret.data()),
                     secret.size(), nullptr, 0);
  char hex[sizeof h * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, h, sizeof h);
  return hex;
}

std::string RecordName(std::string_view prefix, std::string_view hash) {
  return std::string(prefix) + std::string(hash.substr(0, 20));
}

bool HashesEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::chrono::system_clock::time_point> ParseTimestamp(std::string_view text) {
  std::tm tm{};
  int y, mo, d, h, mi, s;
  char z = 0;
  std::string t(text.substr(0, 40));
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &z) != 7)
    return std::nullopt;
  if (z != 'Z' && z != '.') return std::nullopt;
  // Beyond 2200 a nanosecond time_point overflows; no timestamp of Gantry's is that far.
  if (y < 1970 || y > 2200) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace gantry::auth
