// Credentials every test gantryd starts with (GantrydProcess sets them in its environment):
// GANTRY_BOOTSTRAP_TOKEN, an org-admin token that the harness's Api sends by default, and
// GANTRY_ADMIN_PASSWORD, the password of the first user "admin".
#pragma once

namespace gantry::testing {

inline constexpr char kBootstrapToken[] = "gantry-test-bootstrap-token-7f3a9c";
inline constexpr char kAdminPassword[] = "admin-password-for-tests";

}  // namespace gantry::testing
