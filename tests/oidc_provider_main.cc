// oidc_test_provider_server: the test provider of tests/oidc_test_provider.h as a program, for
// the browser test (web/e2e/sso.e2e.mjs), which is not C++. Starts LemonLDAP::NG behind nginx
// with `--redirect-uri URI` registered, prints "issuer URL" on stdout, and runs until its
// stdin closes (the test exits), then stops both servers and removes their directory.
// Exit 77 when the provider cannot be started here (the packages are missing), 1 on misuse.
#include <cstring>
#include <iostream>
#include <string>

#include "oidc_test_provider.h"

int main(int argc, char** argv) {
  std::string redirect;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--redirect-uri") == 0) redirect = argv[i + 1];
  if (redirect.empty()) {
    std::cerr << "usage: oidc_test_provider_server --redirect-uri URI\n";
    return 1;
  }
  auto provider = gantry::testing::OidcTestProvider::Create();
  if (!provider.ok()) {
    std::cerr << provider.status().message() << "\n";
    return 77;
  }
  if (absl::Status s = (*provider)->SetRedirectUri(redirect); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 77;
  }
  std::cout << "issuer " << (*provider)->issuer() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}
