#!/usr/bin/env bash
# A check that only a machine with a real NVIDIA GPU can make: gantryd discovers the GPUs with
# nvidia-smi, a local-driver instance sees exactly the GPU it was assigned (CUDA_VISIBLE_DEVICES,
# and CUDA itself through PyTorch when present), a second one waits for capacity and starts
# by itself when the first is destroyed, and one asking for more GPUs than exist fails at once
# with Unschedulable; the GPU sampler (docs/gpu-sampling.md) reports the utilisation of the
# deployed instance's GPU from the real nvidia-smi; an instance whose profile has an idle policy
# is left running while its workload keeps the GPU busy and is stopped (reason Idle) once the
# real GPU has been idle for the policy's time. Each of these is asserted: the script prints every finding and ends with
# "GPU CHECK PASSED" (exit 0) or "GPU CHECK FAILED: ..." (exit 1).
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
# The probe must be readable by the workload user (gantryd as root runs workloads as
# --workload-user, and the data directory is closed to it).
PROBE_DIR=$(mktemp -d)
chmod 755 "$PROBE_DIR"
export GANTRY_TOKEN="gpu-check-$(head -c 18 /dev/urandom | base64 | tr -d '/+=')"
GANTRY_BOOTSTRAP_TOKEN="$GANTRY_TOKEN" "$GANTRYD" --listen 127.0.0.1:0 --data-dir "$DATA" \
  --log-level info --gpu-sample-interval 2s 2>"$OUT/gantryd.log" &
PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$OUT/gantryd.log" 2>/dev/null && break; sleep 0.1; done
PORT=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$OUT/gantryd.log" | sed 's/.*://')
echo "== gantryd log"; cat "$OUT/gantryd.log"
export BASE="http://127.0.0.1:$PORT/apis/paas.gantry.dev/v1"
cat > "$PROBE_DIR/probe.py" <<'PY'
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
# "busy N": keep the GPU busy with matrix products for N seconds, then sit idle.
if len(sys.argv) > 2 and sys.argv[1] == "busy":
    import torch
    end = time.time() + float(sys.argv[2])
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    while time.time() < end:
        for _ in range(20): y = x @ x
        torch.cuda.synchronize()
    print("BUSY DONE %.1f" % time.time(), flush=True)
while True:
    time.sleep(3600)
PY
python3 - "$DATA" "$PROBE_DIR" <<'PY'
import json, os, sys, time, urllib.request
base, data, probe_dir = os.environ["BASE"], sys.argv[1], sys.argv[2]
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok: fails.append(what)
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + os.environ["GANTRY_TOKEN"]})
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
node = call("GET", "/nodes")[1]["items"][0]["status"]
print("== node", json.dumps(node, indent=1))
smi = [l for l in os.popen("nvidia-smi --query-gpu=index --format=csv,noheader").read().split("\n") if l.strip()]
check(len(node.get("gpus", [])) == len(smi) and len(smi) > 0,
      f"gantryd discovered the {len(smi)} GPU(s) nvidia-smi lists (node has {len(node.get('gpus', []))})")
print(call("POST", "/namespaces/default/environmenttemplates", {"metadata": {"name": "probe"},
      "spec": {"driver": "local", "local": {"command": ["python3", probe_dir + "/probe.py"], "restartPolicy": "Never"}}})[0])
for n, c in (("one-gpu", 1), ("too-many", 2)):
    print(call("POST", "/namespaces/default/computeprofiles", {"metadata": {"name": n},
          "spec": {"templateRef": {"name": "probe"}, "resources": {"gpu": {"count": c}}}})[0])
for n, p in (("a", "one-gpu"), ("b", "one-gpu"), ("big", "too-many")):
    print(call("POST", "/namespaces/default/computeinstances", {"metadata": {"name": n}, "spec": {"profileRef": {"name": p}}})[0])
for n in ("a", "b", "big"):
    print("deploy", n, call("POST", f"/namespaces/default/computeinstances/{n}/deploy")[0])
sa = wait("a", ("Success", "Failed")); print("== a", json.dumps(sa, indent=1))
check(sa.get("phase") == "Success", "instance a (one GPU) is Success")
def probe(name):
    uid = call("GET", "/namespaces/default/computeinstances/" + name)[1]["metadata"]["uid"]
    log = os.path.join(data, "instances", uid, "workload.log")
    end = time.time() + 120
    while time.time() < end:
        text = open(log).read() if os.path.exists(log) else ""
        if "PROBE" in text: return text.strip()
        time.sleep(0.5)
    return "(no PROBE line after 120s)"
def sees(name, st):
    line = probe(name)
    print(f"== what workload {name} sees:", line)
    if not line.startswith("PROBE "):
        check(False, f"workload {name} printed its PROBE line"); return
    seen = json.loads(line[len("PROBE "):])
    want = ",".join(st.get("gpus", []))
    check(len(st.get("gpus", [])) == 1 and seen.get("CUDA_VISIBLE_DEVICES") == want,
          f"workload {name} sees exactly its GPU (CUDA_VISIBLE_DEVICES={seen.get('CUDA_VISIBLE_DEVICES')}, assigned {want})")
    if "torch_device_count" in seen:
        check(seen["torch_device_count"] == 1 and seen.get("matmul_ok") is True,
              f"CUDA in workload {name} sees one device and computes ({seen.get('torch_device_name')})")
sees("a", sa)
def sampled(name, secs=60):
    end = time.time() + secs
    while time.time() < end:
        s = status(name)
        if isinstance(s.get("gpuUtilization"), int): return s
        time.sleep(0.5)
    return status(name)
su = sampled("a"); u = su.get("gpuUtilization")
print("== a sampled", json.dumps({k: su.get(k) for k in ("gpus", "gpuUtilization", "idleSince")}))
check(isinstance(u, int) and 0 <= u <= 100, f"the sampler reports the utilisation of a's GPU ({u} %)")
check(isinstance(u, int) and (u < 5) == ("idleSince" in su),
      "a has idleSince exactly when its utilisation is below 5 % (no idle policy)")
req = urllib.request.Request(base.split("/apis/")[0] + "/metrics",
                             headers={"Authorization": "Bearer " + os.environ["GANTRY_TOKEN"]})
metrics = urllib.request.urlopen(req).read().decode()
series = [l for l in metrics.split("\n") if l.startswith("gantry_gpu_")]
print("== GPU metrics", json.dumps(series))
gpu = (sa.get("gpus") or ["?"])[0]
check(any(l.startswith(f'gantry_gpu_utilization{{gpu="{gpu}"}} ') for l in series),
      f"/metrics has gantry_gpu_utilization of GPU {gpu}")
if len(smi) == 1:
    sb0 = wait("b", ("Waiting",), 30)
    print("== b (should wait)", json.dumps({k: sb0.get(k) for k in ("phase", "reason", "message")}))
    check(sb0.get("phase") == "Waiting" and sb0.get("reason") == "InsufficientCapacity",
          "b waits for the GPU a holds (Waiting, InsufficientCapacity)")
sbig = wait("big", ("Failed",), 30)
print("== big", json.dumps({k: sbig.get(k) for k in ("phase", "reason", "message")}))
if len(smi) < 2:
    check(sbig.get("phase") == "Failed" and sbig.get("reason") == "Unschedulable",
          "big (2 GPUs on a 1-GPU host) fails at once with Unschedulable")
print("== node", json.dumps(call("GET", "/nodes")[1]["items"][0]["status"]["gpus"]))
print("destroy a", call("POST", "/namespaces/default/computeinstances/a/destroy")[0])
sb = wait("b", ("Success", "Failed")); print("== b after a is destroyed", json.dumps({k: sb.get(k) for k in ("phase", "reason", "gpus", "outputs")}))
check(sb.get("phase") == "Success", "b starts by itself once a is destroyed")
sees("b", sb)
print("destroy b", call("POST", "/namespaces/default/computeinstances/b/destroy")[0])
check(wait("b", ("NotDeployed",)).get("phase") == "NotDeployed", "b is destroyed (NotDeployed)")
# Idle reclaim on the real GPU (docs/lifecycle-controller.md): a workload that keeps its GPU
# busy for BUSY seconds is not stopped while busy, and is stopped with reason Idle once the real
# utilisation has stayed below 5 % for 10 s; its GPU is free again and a start brings it back.
BUSY = 30
print(call("POST", "/namespaces/default/environmenttemplates", {"metadata": {"name": "busy"},
      "spec": {"driver": "local", "local": {"command": ["python3", probe_dir + "/probe.py", "busy", str(BUSY)],
                                            "restartPolicy": "Never"}}})[0])
print(call("POST", "/namespaces/default/computeprofiles", {"metadata": {"name": "idle10s"},
      "spec": {"templateRef": {"name": "busy"}, "resources": {"gpu": {"count": 1}},
               "lifecycle": {"idle": {"gpuUtilizationBelow": 5, "after": "10s", "action": "Stop"}}}})[0])
print(call("POST", "/namespaces/default/computeinstances", {"metadata": {"name": "idler"}, "spec": {"profileRef": {"name": "idle10s"}}})[0])
print("deploy idler", call("POST", "/namespaces/default/computeinstances/idler/deploy")[0])
si = wait("idler", ("Success", "Failed"))
check(si.get("phase") == "Success", "idler (idle policy 10s) is Success")
deployed_at = time.time()
busy_seen = []
while time.time() < deployed_at + BUSY - 5:
    s = status("idler")
    busy_seen.append((round(time.time() - deployed_at, 1), s.get("phase"), s.get("gpuUtilization"), s.get("idleSince")))
    time.sleep(2)
print("== idler while busy (t, phase, gpuUtilization, idleSince):", json.dumps(busy_seen))
check(all(p == "Success" for _, p, _, _ in busy_seen), "idler is not stopped while its GPU is busy")
check(any(isinstance(u, int) and u >= 50 for _, _, u, _ in busy_seen),
      "the sampler saw the busy GPU (utilisation >= 50 % at least once)")
check(not any(i for _, _, u, i in busy_seen if isinstance(u, int) and u >= 50 and i),
      "no idleSince while the GPU is busy")
st = wait("idler", ("Stopped",), BUSY + 90)
stopped_after = round(time.time() - deployed_at, 1)
print("== idler", json.dumps({k: st.get(k) for k in ("phase", "reason", "message", "gpus", "idleSince")}),
      f"stopped about {stopped_after}s after Success")
check(st.get("phase") == "Stopped" and st.get("reason") == "Idle",
      "idler is stopped with reason Idle once its real GPU stays idle")
check(stopped_after >= BUSY + 10 - 3, f"not before {BUSY}s busy + 10s idle ({stopped_after}s)")
alloc = call("GET", "/nodes")[1]["items"][0]["status"].get("allocated", {})
print("== node allocated after the idle stop", json.dumps(alloc))
check(sum(alloc.values()) == 0, "the idle stop gave the GPU back")
time.sleep(1)
left = os.popen("pgrep -fc '[p]robe.py busy' || true").read().strip()
check(left == "0", f"the idle workload's process is gone ({left} left)")
print("start idler", call("POST", "/namespaces/default/computeinstances/idler/start")[0])
ss = wait("idler", ("Success", "Failed"))
print("== idler after start", json.dumps({k: ss.get(k) for k in ("phase", "reason", "gpus")}))
check(ss.get("phase") == "Success" and len(ss.get("gpus", [])) == 1, "a start brings idler back on a GPU")
print("destroy idler", call("POST", "/namespaces/default/computeinstances/idler/destroy")[0])
check(wait("idler", ("NotDeployed",)).get("phase") == "NotDeployed", "idler is destroyed (NotDeployed)")
print("GPU CHECK " + ("PASSED" if not fails else "FAILED: " + "; ".join(fails)), flush=True)
sys.exit(1 if fails else 0)
PY
result=$?
kill -TERM $PID; wait $PID; echo "gantryd exit code $?"
leftover=$(pgrep -fc "$PROBE_DIR/probe.py" || true)
echo "== leftover probe processes: $leftover"
[ "$leftover" = 0 ] || { echo "GPU CHECK FAILED: probe processes left behind"; result=1; }
exit $result
