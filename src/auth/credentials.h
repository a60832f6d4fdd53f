// Credentials: password hashing (argon2id, libsodium), random secrets for API tokens and
// web sessions, and the keyed lookup of a presented secret.
//
// A token or session secret is never stored: the store keeps its BLAKE2b-256 hash (the
// secrets are 256-bit random values, so a fast hash is the right one) and names the record
// after the first hex digits of that hash, so a presented secret is found with one keyed
// read and then compared in constant time.
//
// Thread-safety: free functions; libsodium is initialised by the first call.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gantry::auth {

// Passwords: at least kMinPasswordLength characters, at most kMaxPasswordLength bytes.
inline constexpr size_t kMinPasswordLength = 8;
inline constexpr size_t kMaxPasswordLength = 1024;

// argon2id in libsodium's string format ("$argon2id$v=19$m=...").
// INVALID_ARGUMENT (422-worthy message) when the password is too short or too long.
absl::StatusOr<std::string> HashPassword(std::string_view password);
bool VerifyPassword(std::string_view password, std::string_view hash);
// The one answer to a password login that fails, whichever check failed (no such user, wrong
// password, the directory refused the bind, a user of another source), so that the answer
// does not tell which users exist.
inline constexpr char kInvalidLogin[] = "invalid username or password";
// A random password for the bootstrap admin (24 characters, URL-safe).
std::string GeneratePassword();

// A new secret with a prefix: "gnt_…" for API tokens, "gss_…" for sessions, 43 characters
// of URL-safe base64 after it (256 random bits).
std::string NewSecret(std::string_view prefix);
// `len` bytes as URL-safe base64 without padding (RFC 4648 section 5).
std::string Base64Url(const unsigned char* data, size_t len);
// Lower-case hex BLAKE2b-256 of `secret`.
std::string HashSecret(std::string_view secret);
// The record name for a hash: `prefix` + its first 20 hex digits.
std::string RecordName(std::string_view prefix, std::string_view hash);
// Constant-time comparison of two hex hashes of equal length.
bool HashesEqual(std::string_view a, std::string_view b);

// Parses the RFC 3339 UTC timestamps Gantry writes ("2026-11-30T17:56:15Z"), years 1970 to
// 2200; nullopt else.
std::optional<std::chrono::system_clock::time_point> ParseTimestamp(std::string_view text);

}  // namespace gantry::auth
