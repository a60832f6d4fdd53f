// Status propagation helpers, in the manner of Envoy's RETURN_IF_NOT_OK.
//
// RETURN_IF_ERROR(expr)        returns the absl::Status of `expr` from the caller when not ok.
// ASSIGN_OR_RETURN(lhs, expr)  evaluates an absl::StatusOr<T>; on error returns its status,
//                              otherwise moves the value into `lhs` (which may be a declaration).
// Thread-safety: macros only; no state.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GANTRY_CONCAT_INNER_(a, b) a##b
#define GANTRY_CONCAT_(a, b) GANTRY_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status gantry_status_ = (expr);          \
    if (!gantry_status_.ok()) return gantry_status_; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  GANTRY_ASSIGN_OR_RETURN_IMPL_(GANTRY_CONCAT_(gantry_statusor_, __LINE__), lhs, expr)

#define GANTRY_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
