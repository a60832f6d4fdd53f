#include "common/secrets.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>

namespace gantry {

absl::StatusOr<std::unique_ptr<SecretBox>> SecretBox::Open(const std::string& key_path) {
  if (sodium_init() < 0) return absl::UnavailableError("libsodium failed to initialise");
  std::string key(crypto_secretbox_KEYBYTES, '\0');
  int fd = ::open(key_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = ::read(fd, key.data(), key.size());
    char extra;
    ssize_t more = ::read(fd, &extra, 1);
    ::close(fd);
    if (n != static_cast<ssize_t>(key.size()) || more != 0)
      return absl::UnavailableError("the key file " + key_path + " is damaged (expected " +
                                    std::to_string(key.size()) + " bytes)");
    return std::unique_ptr<SecretBox>(new SecretBox(std::move(key)));
  }
  crypto_secretbox_keygen(reinterpret_cast<unsigned char*>(key.data()));
  std::string tmp = key_path + ".tmp";
  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::UnavailableError("cannot create the key file " + key_path);
  bool ok =
      ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), key_path.c_str()) != 0)
    return absl::UnavailableError("cannot write the key file " + key_path);
  return std::unique_ptr<SecretBox>(new SecretBox(std::move(key)));
}

std::string SealContext(std::string_view kind, std::string_view ns, std::string_view name,
                        std::string_view uid, std::string_view field) {
  std::string out;
  for (std::string_view part : {kind, ns, name, uid, field}) {
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

namespace {

std::string Base64(const std::string& bin) {
  std::string b64(sodium_base64_encoded_len(bin.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(b64.data(), b64.size(), reinterpret_cast<const unsigned char*>(bin.data()),
                    bin.size(), sodium_base64_VARIANT_ORIGINAL);
  b64.resize(std::strlen(b64.c_str()));
  return b64;
}

// The bytes after `prefix`, or nullopt when they are not base64 of at least `min` bytes.
std::optional<std::string> Unbase64(std::string_view b64, size_t min) {
  std::string bin(b64.size(), '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(bin.data()), bin.size(), b64.data(),
                        b64.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      len < min)
    return std::nullopt;
  bin.resize(len);
  return bin;
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

bool SecretBox::IsSealed(std::string_view value) {
  return value.starts_with(kSealedPrefix) || IsLegacy(value);
}

bool SecretBox::IsLegacy(std::string_view value) { return value.starts_with(kLegacySealedPrefix); }

std::string SecretBox::Seal(std::string_view plaintext, std::string_view context) const {
  constexpr size_t kNonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  std::string box(kNonce + plaintext.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES, '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(box.data());
  randombytes_buf(nonce, kNonce);
  unsigned long long clen = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + kNonce, &clen, Bytes(plaintext),
                                             plaintext.size(), Bytes(context), context.size(),
                                             nullptr, nonce, Bytes(key_));
  box.resize(kNonce + clen);
  return kSealedPrefix + Base64(box);
}

absl::StatusOr<std::string> SecretBox::Unseal(std::string_view sealed,
                                              std::string_view context) const {
  if (IsLegacy(sealed)) return UnsealLegacy(sealed);
  if (!sealed.starts_with(kSealedPrefix)) return absl::InvalidArgumentError("not a sealed value");
  constexpr size_t kNonce = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  constexpr size_t kMac = crypto_aead_xchacha20poly1305_ietf_ABYTES;
  auto box = Unbase64(sealed.substr(sizeof(kSealedPrefix) - 1), kNonce + kMac);
  if (!box) return absl::InvalidArgumentError("a sealed value is damaged");
  std::string plain(box->size() - kNonce - kMac, '\0');
  unsigned long long plen = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          reinterpret_cast<unsigned char*>(plain.data()), &plen, nullptr, Bytes(*box) + kNonce,
          box->size() - kNonce, Bytes(context), context.size(), Bytes(*box), Bytes(key_)) != 0)
    return absl::InvalidArgumentError(
        "a sealed value fails authentication (another key, or sealed for another field)");
  plain.resize(plen);
  return plain;
}

absl::StatusOr<std::string> SecretBox::UnsealLegacy(std::string_view sealed) const {
  auto box = Unbase64(sealed.substr(sizeof(kLegacySealedPrefix) - 1),
                      crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES);
  if (!box) return absl::InvalidArgumentError("a sealed value is damaged");
  const auto* nonce = Bytes(*box);
  std::string plain(box->size() - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  if (crypto_secretbox_open_easy(
          reinterpret_cast<unsigned char*>(plain.data()), nonce + crypto_secretbox_NONCEBYTES,
          box->size() - crypto_secretbox_NONCEBYTES, nonce, Bytes(key_)) != 0)
    return absl::InvalidArgumentError("a sealed value fails authentication (wrong key?)");
  return plain;
}

}  // namespace gantry
