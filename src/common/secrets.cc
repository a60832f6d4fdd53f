#include "common/secrets.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

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
  bool ok = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), key_path.c_str()) != 0)
    return absl::UnavailableError("cannot write the key file " + key_path);
  return std::unique_ptr<SecretBox>(new SecretBox(std::move(key)));
}

bool SecretBox::IsSealed(std::string_view value) {
  return value.substr(0, sizeof(kSealedPrefix) - 1) == kSealedPrefix;
}

std::string SecretBox::Seal(std::string_view plaintext) const {
  std::string box(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plaintext.size(), '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(box.data());
  randombytes_buf(nonce, crypto_secretbox_NONCEBYTES);
  crypto_secretbox_easy(nonce + crypto_secretbox_NONCEBYTES,
                        reinterpret_cast<const unsigned char*>(plaintext.data()), plaintext.size(),
                        nonce, reinterpret_cast<const unsigned char*>(key_.data()));
  std::string b64(sodium_base64_encoded_len(box.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(b64.data(), b64.size(), reinterpret_cast<const unsigned char*>(box.data()),
                    box.size(), sodium_base64_VARIANT_ORIGINAL);
  b64.resize(std::strlen(b64.c_str()));
  return kSealedPrefix + b64;
}

absl::StatusOr<std::string> SecretBox::Unseal(std::string_view sealed) const {
  if (!IsSealed(sealed)) return absl::InvalidArgumentError("not a sealed value");
  std::string_view b64 = sealed.substr(sizeof(kSealedPrefix) - 1);
  std::string box(b64.size(), '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(box.data()), box.size(), b64.data(),
                        b64.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      len < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES)
    return absl::InvalidArgumentError("a sealed value is damaged");
  const auto* nonce = reinterpret_cast<const unsigned char*>(box.data());
  std::string plain(len - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  if (crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(plain.data()),
                                 nonce + crypto_secretbox_NONCEBYTES,
                                 len - crypto_secretbox_NONCEBYTES, nonce,
                                 reinterpret_cast<const unsigned char*>(key_.data())) != 0)
    return absl::InvalidArgumentError("a sealed value fails authentication (wrong key?)");
  return plain;
}

}  // namespace gantry
