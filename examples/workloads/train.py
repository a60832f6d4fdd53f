#!/usr/bin/env python3
"""A batch "training" workload for the local driver demo: prints an epoch and a falling loss
every few seconds on the GPUs it was given, until it is destroyed."""
import math
import os
import time

gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
print(f"training {os.environ.get('GANTRY_INSTANCE')} on GPUs [{gpus}]", flush=True)
epoch = 0
while True:
    epoch += 1
    print(f"epoch {epoch} loss {2.5 * math.exp(-epoch / 20):.4f}", flush=True)
    time.sleep(float(os.environ.get("EPOCH_SECONDS", "5")))
