// SecretBox: encryption at rest of sensitive values (variables of instances, sensitive
// defaults of templates and profiles) with a 32-byte key kept in a file of the data
// directory (mode 0600).
//
// A sealed value is the string "sealed:v2:" + base64(nonce || ciphertext), sealed with
// XChaCha20-Poly1305 (libsodium's IETF AEAD) and bound to a *context*: the associated data
// names the object and the field the value was sealed for (SealContext below). Unsealing
// under any other context fails, so a ciphertext copied into another variable, another
// instance or another project never decrypts. "sealed:v1:" values (XSalsa20-Poly1305
// secretbox, no context) were written before contexts existed; they still unseal, and
// gantryd re-seals them as v2 when the object is next written.
//
// The store keeps sealed values; the API shows them as kRedacted; only the engine unseals
// an instance's values, to hand them to a driver.
//
// Thread-safety: immutable after Open; Seal/Unseal are safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gantry {

inline constexpr char kSealedPrefix[] = "sealed:v2:";
inline constexpr char kLegacySealedPrefix[] = "sealed:v1:";
// Anything that starts like a sealed value, of any version: refused outside sealed fields.
inline constexpr char kSealedMarker[] = "sealed:";
inline constexpr char kRedacted[] = "<sensitive>";

// The context a value is sealed for: kind, project, object name, uid and the field, e.g.
// "ComputeInstance/ml/alice-nb/2f0c…/variables/hf_token". The uid makes a value sealed for
// a deleted object useless for a new one of the same name.
std::string SealContext(std::string_view kind, std::string_view ns, std::string_view name,
                        std::string_view uid, std::string_view field);

class SecretBox {
 public:
  // Reads the key at `key_path`, creating it (random, 0600) when absent. UNAVAILABLE when
  // the file cannot be read or written, or has the wrong size.
  static absl::StatusOr<std::unique_ptr<SecretBox>> Open(const std::string& key_path);

  // Seals `plaintext` for `context` (see SealContext); a fresh random nonce each call.
  std::string Seal(std::string_view plaintext, std::string_view context) const;
  // INVALID_ARGUMENT when `sealed` is not a sealed value, is damaged, or fails
  // authentication: another key, or sealed for another context.
  absl::StatusOr<std::string> Unseal(std::string_view sealed, std::string_view context) const;
  // True for v2 and legacy v1 values.
  static bool IsSealed(std::string_view value);
  static bool IsLegacy(std::string_view value);

 private:
  absl::StatusOr<std::string> UnsealLegacy(std::string_view sealed) const;
  explicit SecretBox(std::string key) : key_(std::move(key)) {}
  const std::string key_;  // crypto_secretbox_KEYBYTES bytes
};

}  // namespace gantry
