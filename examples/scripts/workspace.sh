#!/bin/sh
# An exec-driver template script: gives an instance a workspace directory.
#   apply:   creates $GANTRY_STATE_DIR/workspace with a manifest of what was asked for
#   destroy: removes it
# Both are idempotent, as the exec driver's contract requires (docs/drivers.md).
set -eu
action="$1"
ws="$GANTRY_STATE_DIR/workspace"
case "$action" in
  apply)
    echo "preparing workspace for $GANTRY_PROJECT/$GANTRY_INSTANCE"
    mkdir -p "$ws"
    cat > "$ws/request.json"          # the instance, variables and resources from gantryd
    echo "labels: team=${GANTRY_LABEL_TEAM:-none} env=${GANTRY_LABEL_ENV:-none}"
    sleep "${PROVISION_SECONDS:-2}"   # the time a real provisioner would take
    printf '{"workspace": "%s", "endpoint": "file://%s"}\n' "$ws" "$ws" > "$GANTRY_OUTPUTS"
    echo "workspace ready at $ws"
    ;;
  destroy)
    echo "removing workspace of $GANTRY_PROJECT/$GANTRY_INSTANCE"
    rm -rf "$ws"
    ;;
  *)
    echo "unknown action: $action" >&2
    exit 2
    ;;
esac
