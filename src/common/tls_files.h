// The certificate gantryd serves HTTPS with when none is given: a self-signed certificate
// (EC P-256, SHA-256, valid 825 days) for localhost, 127.0.0.1, ::1 and the hosts given,
// written once into the data directory and reused on later starts. Clients trust it by
// pinning it as their certificate authority (`gantry kubeconfig --ca-file DATA/tls.crt`).
//
// Thread-safety: free function; call it once at start-up.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gantry {

// Creates `cert_path` and `key_path` (0600) unless both exist. UNAVAILABLE when OpenSSL or
// the file system fails.
absl::Status EnsureSelfSignedCertificate(const std::string& cert_path, const std::string& key_path,
                                         const std::vector<std::string>& hosts);

}  // namespace gantry
