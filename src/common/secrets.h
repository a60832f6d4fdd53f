// SecretBox: encryption at rest of sensitive variable values (libsodium secretbox,
// XSalsa20-Poly1305) with a 32-byte key kept in a file of the data directory (mode 0600).
//
// A sealed value is the string "sealed:v1:" + base64(nonce || ciphertext); it is what the
// store keeps. The API shows sealed values as kRedacted; only the engine unseals them, to
// hand them to a driver.
//
// Thread-safety: immutable after Open; Seal/Unseal are safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gantry {

inline constexpr char kSealedPrefix[] = "sealed:v1:";
inline constexpr char kRedacted[] = "<sensitive>";

class SecretBox {
 public:
  // Reads the key at `key_path`, creating it (random, 0600) when absent. UNAVAILABLE when
  // the file cannot be read or written, or has the wrong size.
  static absl::StatusOr<std::unique_ptr<SecretBox>> Open(const std::string& key_path);

  std::string Seal(std::string_view plaintext) const;
  // INVALID_ARGUMENT when `sealed` is not a sealed value or fails authentication.
  absl::StatusOr<std::string> Unseal(std::string_view sealed) const;
  static bool IsSealed(std::string_view value);

 private:
  explicit SecretBox(std::string key) : key_(std::move(key)) {}
  const std::string key_;  // crypto_secretbox_KEYBYTES bytes
};

}  // namespace gantry
