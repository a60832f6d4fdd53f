#!/bin/sh
# An exec-driver template script for a service deployed onto a compute instance (a notebook
# server, an MLOps platform). gantryd passes the compute instance it runs on as
# GANTRY_COMPUTE_NAME / GANTRY_COMPUTE_PROJECT and its outputs as GANTRY_COMPUTE_<OUTPUT>
# (here GANTRY_COMPUTE_WORKSPACE and GANTRY_COMPUTE_ENDPOINT from workspace.sh).
#   apply:   installs the service into the compute instance's workspace
#   destroy: removes it
# Both are idempotent, as the exec driver's contract requires (docs/drivers.md).
set -eu
action="$1"
dir="${GANTRY_COMPUTE_WORKSPACE:-$GANTRY_STATE_DIR}/services/$GANTRY_INSTANCE"
case "$action" in
  apply)
    echo "installing service $GANTRY_PROJECT/$GANTRY_INSTANCE onto compute instance" \
         "$GANTRY_COMPUTE_PROJECT/$GANTRY_COMPUTE_NAME (${GANTRY_COMPUTE_ENDPOINT:-no endpoint})"
    mkdir -p "$dir"
    cat > "$dir/request.json"         # the service, its variables and the compute instance
    sleep "${PROVISION_SECONDS:-1}"
    printf '{"url": "%s/services/%s", "computeInstance": "%s"}\n' \
      "${GANTRY_COMPUTE_ENDPOINT:-file://$dir}" "$GANTRY_INSTANCE" "$GANTRY_COMPUTE_NAME" > "$GANTRY_OUTPUTS"
    echo "service ready"
    ;;
  destroy)
    echo "removing service $GANTRY_PROJECT/$GANTRY_INSTANCE"
    rm -rf "$dir"
    ;;
  *)
    echo "unknown action: $action" >&2
    exit 2
    ;;
esac
