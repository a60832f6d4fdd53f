#include "common/tls_files.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace gantry {
namespace {

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;

absl::Status Fail(const std::string& what) {
  return absl::UnavailableError("cannot create a self-signed TLS certificate: " + what);
}

bool IsIp(const std::string& host) {
  return host.find_first_not_of("0123456789.") == std::string::npos ||
         host.find(':') != std::string::npos;
}

bool AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

}  // namespace

absl::Status EnsureSelfSignedCertificate(const std::string& cert_path, const std::string& key_path,
                                         const std::vector<std::string>& hosts) {
  if (std::filesystem::exists(cert_path) && std::filesystem::exists(key_path))
    return absl::OkStatus();
  Key key(EVP_EC_gen("P-256"));
  if (!key) return Fail("key generation failed");
  Cert cert(X509_new());
  if (!cert) return Fail("out of memory");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 825L * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("Gantry"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("gantryd"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  std::string san = "DNS:localhost,IP:127.0.0.1,IP:::1";
  for (const auto& h : hosts) {
    if (h.empty() || h == "localhost" || h == "127.0.0.1" || h == "::1" || h == "0.0.0.0" ||
        h == "::")
      continue;
    if (h.find_first_of(", \n") != std::string::npos) continue;
    san += (IsIp(h) ? ",IP:" : ",DNS:") + h;
  }
  if (!AddExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign") ||
      !AddExtension(cert.get(), NID_ext_key_usage, "serverAuth") ||
      !AddExtension(cert.get(), NID_subject_alt_name, san))
    return Fail("cannot add extensions");
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return Fail("signing failed");

  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(key_path).parent_path(), ec);
  mode_t old = ::umask(077);
  FILE* kf = std::fopen(key_path.c_str(), "w");
  ::umask(old);
  if (!kf) return Fail("cannot write " + key_path);
  bool ok = PEM_write_PrivateKey(kf, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
  ok = std::fclose(kf) == 0 && ok;
  FILE* cf = std::fopen(cert_path.c_str(), "w");
  if (!cf) return Fail("cannot write " + cert_path);
  ok = PEM_write_X509(cf, cert.get()) == 1 && ok;
  ok = std::fclose(cf) == 0 && ok;
  if (!ok) return Fail("cannot write the PEM files");
  return absl::OkStatus();
}

}  // namespace gantry
