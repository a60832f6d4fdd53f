#!/usr/bin/env python3
"""The official Kubernetes Python client (Debian's python3-kubernetes) against a real gantryd.

Issue 24: a user drives Gantry with the client as they would drive Kubernetes. Covered:
discovery and CRUD through the dynamic client, label selectors, limit/continue paging, merge
patch, the 409 of a stale replace, watches (the client sends watch=True) from a
resourceVersion, bookmarks, an expired resourceVersion (410), the deploy subresource through
the client's generic call_api, refusals as ApiException carrying the Status body, and the
Python example of docs/api.md ("From a program"), run as written.

    client_test.py --gantryd PATH --gantry PATH [--docs docs/api.md]

A fresh gantryd (127.0.0.1:0, temporary data directory, the bootstrap token) per run; the
client reads the kubeconfig that `gantry kubeconfig` prints. No sleeps: watches stop on the
event they wait for. Exits 0 pass, 1 fail, 77 skip (python3-kubernetes missing; a failure
instead when CI or GANTRY_CI is set).
"""
import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

IN_CI = bool(os.environ.get("CI") or os.environ.get("GANTRY_CI"))
try:
    import kubernetes
    from kubernetes import client, config, dynamic, watch
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic import exceptions as dynamic_errors
except ImportError as e:
    if IN_CI:
        print(f"FAIL: the Kubernetes Python client is missing ({e}); CI must run this test "
              "(apt-get install python3-kubernetes)")
        sys.exit(1)
    print(f"SKIP: the Kubernetes Python client is missing ({e}): apt-get install python3-kubernetes")
    sys.exit(77)

GROUP, VERSION, PROJECT = "paas.gantry.dev", "v1", "default"
API_VERSION = f"{GROUP}/{VERSION}"
ARGS = None


class Gantryd:
    """gantryd on 127.0.0.1 in a temporary directory; learns its port from its log."""

    def __init__(self, binary, args):
        self.binary, self.args = binary, args
        # As root, workloads run as gantry-workload in DATA_DIR.workloads beside the data dir:
        # the directory holding both must be traversable by that user.
        self.root = tempfile.mkdtemp(prefix="gantry-py-")
        os.chmod(self.root, 0o711)
        self.data_dir = os.path.join(self.root, "data")
        self.token = "gantry-py-" + secrets.token_hex(16)
        self.log = []
        self.proc = None
        self.url = None

    def start(self, port=0):
        env = dict(os.environ, GANTRY_BOOTSTRAP_TOKEN=self.token,
                   GANTRY_ADMIN_PASSWORD=secrets.token_hex(12))
        self.proc = subprocess.Popen(
            [self.binary, "--listen", f"127.0.0.1:{port}", "--data-dir", self.data_dir,
             *self.args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, env=env, text=True, errors="replace")
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        else:
            raise RuntimeError("gantryd exited before listening:\n" + "".join(self.log))
        self.drain = threading.Thread(target=self._drain, args=(self.proc,), daemon=True)
        self.drain.start()

    def _drain(self, proc):
        for line in proc.stderr:
            self.log.append(line)

    def stop(self):
        """SIGTERM and wait; returns the exit code (sanitizer reports make it non-zero)."""
        if self.proc is None:
            return 0
        self.proc.terminate()
        code = self.proc.wait()
        self.drain.join()
        self.proc.stderr.close()
        self.proc = None
        return code

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


def kubeconfig(server, token, path):
    """What a user does: `gantry kubeconfig` with the server and a token, into a file."""
    # A home without a gantry config file: nothing but the flags counts.
    env = {k: v for k, v in os.environ.items() if k != "GANTRY_CONFIG"}
    env["HOME"] = os.path.dirname(path)
    out = subprocess.run([ARGS.gantry, "--server", server, "--token", token, "-n", PROJECT,
                          "kubeconfig"], env=env, check=True, capture_output=True, text=True)
    with open(path, "w") as f:
        f.write(out.stdout)


def template(name):
    return {"apiVersion": API_VERSION, "kind": "EnvironmentTemplate",
            "metadata": {"name": name},
            "spec": {"displayName": "Script", "driver": "exec",
                     "exec": {"command": ["true"], "workingDir": "/"}}}


def profile(name, tmpl):
    return {"apiVersion": API_VERSION, "kind": "ComputeProfile", "metadata": {"name": name},
            "spec": {"displayName": "No GPUs", "templateRef": {"name": tmpl}}}


def instance(name, profile_name, labels=None):
    return {"apiVersion": API_VERSION, "kind": "ComputeInstance",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"displayName": name, "profileRef": {"name": profile_name}}}


class ClientTest(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        cls.server = Gantryd(ARGS.gantryd, ["--event-retention", "50",
                                            "--watch-bookmark-seconds", "0.2"])
        cls.server.start()
        cls.kubeconfig = os.path.join(cls.server.root, "kubeconfig")
        kubeconfig(cls.server.url, cls.server.token, cls.kubeconfig)
        cls.api_client = config.new_client_from_config(config_file=cls.kubeconfig)
        cls.custom = client.CustomObjectsApi(cls.api_client)
        cls.dyn = dynamic.DynamicClient(
            cls.api_client, cache_file=os.path.join(cls.server.root, "discovery.json"))
        cls.templates = cls.dyn.resources.get(api_version=API_VERSION, kind="EnvironmentTemplate")
        cls.profiles = cls.dyn.resources.get(api_version=API_VERSION, kind="ComputeProfile")
        cls.instances = cls.dyn.resources.get(api_version=API_VERSION, kind="ComputeInstance")
        cls.templates.create(body=template("script"), namespace=PROJECT)
        cls.profiles.create(body=profile("cpu", "script"), namespace=PROJECT)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        log = "".join(cls.server.log)
        cls.server.cleanup()
        if code != 0:
            raise AssertionError(f"gantryd exited with {code} on SIGTERM:\n{log[-6000:]}")

    def list_names(self, **kwargs):
        return [o.metadata.name for o in self.instances.get(namespace=PROJECT, **kwargs).items]

    def test_discovery(self):
        self.assertTrue(self.instances.namespaced)
        self.assertEqual(self.instances.name, "computeinstances")
        projects = self.dyn.resources.get(api_version=API_VERSION, kind="Project")
        self.assertFalse(projects.namespaced)
        self.assertIn("default", [p.metadata.name for p in projects.get().items])

    def test_crud_selectors_and_paging(self):
        for i, team in enumerate(["llm", "llm", "vision", "llm", "vision"]):
            self.instances.create(body=instance(f"crud-{i}", "cpu", {"team": team, "t": "crud"}),
                                  namespace=PROJECT)
        self.assertEqual(self.list_names(label_selector="t=crud,team=llm"),
                         ["crud-3", "crud-1", "crud-0"])
        self.assertEqual(self.list_names(label_selector="t=crud,team in (vision)"),
                         ["crud-4", "crud-2"])
        pages, token = [], None
        while True:
            page = self.instances.get(namespace=PROJECT, label_selector="t=crud", limit=2,
                                      _continue=token)
            pages.append([o.metadata.name for o in page.items])
            token = page.to_dict()["metadata"].get("continue")
            if not token:
                break
        self.assertEqual(pages, [["crud-4", "crud-3"], ["crud-2", "crud-1"], ["crud-0"]])

        patched = self.instances.patch(name="crud-0", namespace=PROJECT,
                                       body={"spec": {"description": "patched"}},
                                       content_type="application/merge-patch+json")
        self.assertEqual(patched.spec.description, "patched")
        stale = instance("crud-0", "cpu")
        stale["metadata"]["resourceVersion"] = "1"
        with self.assertRaises(dynamic_errors.ConflictError) as ctx:
            self.instances.replace(body=stale, namespace=PROJECT)
        self.assertEqual(ctx.exception.status, 409)
        current = self.instances.get(name="crud-0", namespace=PROJECT).to_dict()
        current["spec"]["description"] = "replaced"
        self.assertEqual(self.instances.replace(body=current, namespace=PROJECT).spec.description,
                         "replaced")
        for i in range(5):
            self.instances.delete(name=f"crud-{i}", namespace=PROJECT)
        with self.assertRaises(dynamic_errors.NotFoundError):
            self.instances.get(name="crud-0", namespace=PROJECT)

    def test_watch_from_a_resource_version(self):
        rv = self.custom.list_namespaced_custom_object(
            GROUP, VERSION, PROJECT, "computeinstances")["metadata"]["resourceVersion"]
        self.instances.create(body=instance("w-1", "cpu"), namespace=PROJECT)
        self.instances.patch(name="w-1", namespace=PROJECT, body={"spec": {"description": "x"}},
                             content_type="application/merge-patch+json")
        self.instances.delete(name="w-1", namespace=PROJECT)
        seen = []
        w = watch.Watch()
        for event in w.stream(self.custom.list_namespaced_custom_object, GROUP, VERSION, PROJECT,
                              "computeinstances", resource_version=rv):
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if event["type"] == "DELETED":
                w.stop()
        self.assertEqual(seen, [("ADDED", "w-1"), ("MODIFIED", "w-1"), ("DELETED", "w-1")])

    def test_bookmarks(self):
        rv = self.custom.list_namespaced_custom_object(
            GROUP, VERSION, PROJECT, "computeinstances")["metadata"]["resourceVersion"]
        w = watch.Watch()
        for event in w.stream(self.custom.list_namespaced_custom_object, GROUP, VERSION, PROJECT,
                              "computeinstances", resource_version=rv,
                              allow_watch_bookmarks=True):
            self.assertEqual(event["type"], "BOOKMARK")
            self.assertEqual(event["object"]["kind"], "ComputeInstance")
            self.assertGreaterEqual(int(event["object"]["metadata"]["resourceVersion"]), int(rv))
            w.stop()
        self.assertEqual(int(w.resource_version), int(event["object"]["metadata"]["resourceVersion"]))

    def test_expired_resource_version_is_410(self):
        # --event-retention 50; compaction runs every 100 commits.
        for i in range(120):
            self.custom.patch_cluster_custom_object(GROUP, VERSION, "projects", PROJECT,
                                                    {"metadata": {"labels": {"n": str(i)}}})
        w = watch.Watch()
        with self.assertRaises(ApiException) as ctx:
            for _ in w.stream(self.custom.list_namespaced_custom_object, GROUP, VERSION, PROJECT,
                              "computeinstances", resource_version="1"):
                pass
        self.assertEqual(ctx.exception.status, 410)
        self.assertIn("Expired", ctx.exception.reason)

    def test_deploy_through_the_generic_call(self):
        self.instances.create(body=instance("deploy-me", "cpu"), namespace=PROJECT)
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{PROJECT}/computeinstances/deploy-me/deploy"
        body, status, _ = self.api_client.call_api(path, "POST", auth_settings=["BearerToken"],
                                                   response_type="object",
                                                   _return_http_data_only=False)
        self.assertEqual(status, 202)
        self.assertEqual(body["metadata"]["name"], "deploy-me")
        w = watch.Watch()
        for event in w.stream(self.custom.list_namespaced_custom_object, GROUP, VERSION, PROJECT,
                              "computeinstances", field_selector="metadata.name=deploy-me"):
            if event["object"]["status"].get("phase") in ("Success", "Failed"):
                w.stop()
        self.assertEqual(event["object"]["status"]["phase"], "Success", event["object"]["status"])

    def test_refusals_are_api_exceptions_with_the_status(self):
        with self.assertRaises(ApiException) as ctx:
            self.custom.get_namespaced_custom_object(GROUP, VERSION, PROJECT, "computeinstances",
                                                     "nope")
        self.assertEqual(ctx.exception.status, 404)
        status = json.loads(ctx.exception.body)
        self.assertEqual((status["kind"], status["reason"], status["code"]),
                         ("Status", "NotFound", 404))
        self.assertEqual(status["message"], 'computeinstances.paas.gantry.dev "nope" not found')

        bad = instance("bad", "cpu")
        bad["spec"]["colour"] = "blue"
        with self.assertRaises(ApiException) as ctx:
            self.custom.create_namespaced_custom_object(GROUP, VERSION, PROJECT,
                                                        "computeinstances", bad)
        self.assertEqual(ctx.exception.status, 422)
        status = json.loads(ctx.exception.body)
        self.assertEqual(status["reason"], "Invalid")
        self.assertEqual(status["details"]["causes"][0]["field"], "spec.colour")

        self.instances.create(body=instance("busy", "cpu"), namespace=PROJECT)
        with self.assertRaises(ApiException) as ctx:
            self.custom.list_namespaced_custom_object(GROUP, VERSION, PROJECT, "computeinstances",
                                                      limit=-1)
        self.assertEqual(ctx.exception.status, 400)
        self.assertEqual(json.loads(ctx.exception.body)["message"],
                         'limit must be a non-negative integer, not "-1"')

    def test_the_python_example_of_docs_api_md(self):
        with open(ARGS.docs) as f:
            docs = f.read()
        section = docs[docs.index("## From a program"):]
        code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        self.instances.create(body=instance("llm-train", "cpu", {"team": "llm"}),
                              namespace=PROJECT)
        script = os.path.join(self.server.root, "example.py")
        with open(script, "w") as f:
            f.write(code)
        out = subprocess.run([sys.executable, script], capture_output=True, text=True,
                             env=dict(os.environ, KUBECONFIG=self.kubeconfig))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "llm-train NotDeployed", out.stdout)
        self.assertEqual(lines[-1], "MODIFIED llm-train Success", out.stdout)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantryd", required=True)
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--docs", default=os.path.join(os.path.dirname(__file__),
                                                       "../../../docs/api.md"))
    ARGS, rest = parser.parse_known_args()
    print(f"kubernetes (Python) {kubernetes.__version__}")
    result = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
