#!/usr/bin/env python3
"""A notebook-like HTTP service for the local driver demo.

Serves a page that shows which instance this is and which GPUs it was given
(CUDA_VISIBLE_DEVICES), with nvidia-smi's view of them when nvidia-smi is present.
Listens on $GANTRY_PORT_HTTP (allocated by gantryd).
"""
import html
import http.server
import os
import shutil
import subprocess

PORT = int(os.environ.get("GANTRY_PORT_HTTP", os.environ.get("PORT", "8888")))
GPUS = os.environ.get("CUDA_VISIBLE_DEVICES", "")


def gpu_report():
    if not shutil.which("nvidia-smi"):
        return "nvidia-smi is not installed on this host (GPUs are configured, not discovered)."
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20)
        return out.stdout or out.stderr
    except Exception as e:  # noqa: BLE001 - shown to the user as is
        return f"nvidia-smi failed: {e}"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (
            "<!doctype html><title>Gantry notebook</title>"
            f"<h1>{html.escape(os.environ.get('GANTRY_INSTANCE', '?'))}</h1>"
            f"<p>Project: {html.escape(os.environ.get('GANTRY_PROJECT', '?'))}</p>"
            f"<p>CUDA_VISIBLE_DEVICES={html.escape(GPUS) or '(none)'}</p>"
            f"<pre>{html.escape(gpu_report())}</pre>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        print("request:", fmt % args, flush=True)


print(f"notebook for {os.environ.get('GANTRY_INSTANCE')} on port {PORT}, GPUs [{GPUS}]", flush=True)
http.server.ThreadingHTTPServer(("0.0.0.0", PORT), Handler).serve_forever()
