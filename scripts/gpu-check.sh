#!/usr/bin/env bash
# A check that only a machine with a real NVIDIA GPU can make: gantryd discovers the GPUs with
# nvidia-smi, a local-driver instance sees exactly the GPU it was assigned (CUDA_VISIBLE_DEVICES,
# and CUDA itself through PyTorch when present), a second one waits for capacity and starts
# by itself when the first is destroyed, and one asking for more GPUs than exist fails at once
# with Unschedulable.
#   usage: scripts/gpu-check.sh GANTRYD_BINARY [OUT_DIR]
set -uo pipefail
GANTRYD="$1"
OUT="${2:-/tmp/gpu-check}"
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-check.log") 2>&1
echo "== nvidia-smi"
nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader
DATA=$(mktemp -d)
chmod 711 "$DATA"  # as root, gantryd's workload user must reach DATA_DIR.workloads beside the data dir
"$GANTRYD" --listen 127.0.0.1:0 --data-dir "$DATA" --log-level info 2>"$OUT/gantryd.log" &
PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$OUT/gantryd.log" 2>/dev/null && break; sleep 0.1; done
PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$OUT/gantryd.log" | sed 's/.*://')
echo "== gantryd log"; cat "$OUT/gantryd.log"
export BASE="http://127.0.0.1:$PORT/apis/paas.gantry.dev/v1"
cat > "$DATA/probe.py" <<'PY'
import json, os, sys, time
r = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
     "NVIDIA_VISIBLE_DEVICES": os.environ.get("NVIDIA_VISIBLE_DEVICES"),
     "GANTRY_GPUS": os.environ.get("GANTRY_GPUS")}
try:
    import torch
    r["torch_device_count"] = torch.cuda.device_count()
    if torch.cuda.device_count():
        r["torch_device_name"] = torch.cuda.get_device_name(0)
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        t = time.time(); y = x @ x; torch.cuda.synchronize()
        r["matmul_ok"] = bool(torch.isfinite(y.float()).all().item())
except Exception as e:
    r["torch_error"] = repr(e)
print("PROBE " + json.dumps(r), flush=True)
while True:
    time.sleep(3600)
PY
python3 - "$DATA" <<'PY'
import json, os, sys, time, urllib.request
base, data = os.environ["BASE"], sys.argv[1]
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r: return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e: return e.code, json.loads(e.read() or b"{}")
def status(name): return call("GET", "/namespaces/default/computeinstances/" + name)[1].get("status", {})
def wait(name, phases, secs=120):
    end = time.time() + secs
    while time.time() < end:
        s = status(name)
        if s.get("phase") in phases: return s
        time.sleep(0.5)
    return status(name)
print("== node", json.dumps(call("GET", "/nodes")[1]["items"][0]["status"], indent=1))
print(call("POST", "/namespaces/default/environmenttemplates", {"metadata": {"name": "probe"},
      "spec": {"driver": "local", "local": {"command": ["python3", data + "/probe.py"], "restartPolicy": "Never"}}})[0])
for n, c in (("one-gpu", 1), ("too-many", 2)):
    print(call("POST", "/namespaces/default/computeprofiles", {"metadata": {"name": n},
          "spec": {"templateRef": {"name": "probe"}, "resources": {"gpu": {"count": c}}}})[0])
for n, p in (("a", "one-gpu"), ("b", "one-gpu"), ("big", "too-many")):
    print(call("POST", "/namespaces/default/computeinstances", {"metadata": {"name": n}, "spec": {"profileRef": {"name": p}}})[0])
for n in ("a", "b", "big"):
    print("deploy", n, call("POST", f"/namespaces/default/computeinstances/{n}/deploy")[0])
sa = wait("a", ("Success", "Failed")); print("== a", json.dumps(sa, indent=1))
def probe(name):
    uid = call("GET", "/namespaces/default/computeinstances/" + name)[1]["metadata"]["uid"]
    log = os.path.join(data, "instances", uid, "workload.log")
    end = time.time() + 120
    while time.time() < end:
        text = open(log).read() if os.path.exists(log) else ""
        if "PROBE" in text: return text.strip()
        time.sleep(0.5)
    return "(no PROBE line after 120s)"
print("== what workload a sees:", probe("a"))
time.sleep(2)
print("== b (should wait)", json.dumps({k: status("b").get(k) for k in ("phase", "reason", "message")}))
print("== big", json.dumps({k: status("big").get(k) for k in ("phase", "reason", "message")}))
print("== node", json.dumps(call("GET", "/nodes")[1]["items"][0]["status"]["gpus"]))
print("destroy a", call("POST", "/namespaces/default/computeinstances/a/destroy")[0])
sb = wait("b", ("Success", "Failed")); print("== b after a is destroyed", json.dumps({k: sb.get(k) for k in ("phase", "reason", "gpus", "outputs")}))
print("== what workload b sees:", probe("b"))
print("destroy b", call("POST", "/namespaces/default/computeinstances/b/destroy")[0])
wait("b", ("NotDeployed",))
PY
kill -TERM $PID; wait $PID; echo "gantryd exit code $?"
echo "== leftover probe processes: $(pgrep -fc probe.py || true)"
