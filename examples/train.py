#!/usr/bin/env python3
"""A tiny training loop that reports to larkbus.

Run in a pod (examples/train-job.yaml) it reports through the node's socket;
run by hand it needs a job name: ``LARK_JOB=train-demo python3 train.py``.
It prints to stdout and stderr so `larkctl logs job train-demo` shows both.
"""
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "libbus", "python"))
import larkbus  # noqa: E402

STEPS = int(os.environ.get("TRAIN_STEPS", "50"))
EVERY = max(1, STEPS // 10)


def main():
    rng = random.Random(int(os.environ.get("TRAIN_SEED", "0")))
    reward = 0.0
    for step in range(1, STEPS + 1):
        loss = 1.0 / math.sqrt(step) + rng.random() * 0.01
        reward = min(1.0, reward + rng.random() * 0.05)
        print("step %d loss %.4f reward %.3f" % (step, loss, reward),
              flush=True)
        if step % EVERY == 0:
            larkbus.emit("metric", step=step, loss=round(loss, 4),
                         reward=round(reward, 3))
            larkbus.emit("progress", step=step, total=STEPS)
            print("checkpoint at step %d" % step, file=sys.stderr, flush=True)
            larkbus.emit("checkpoint", step=step,
                         path="/tmp/train-demo/ckpt-%d" % step)
        time.sleep(float(os.environ.get("TRAIN_SLEEP", "0.02")))
    print("done: %d steps, reward %.3f" % (STEPS, reward), flush=True)


if __name__ == "__main__":
    try:
        main()
    except larkbus.LarkError as e:
        print("train.py: %s" % e, file=sys.stderr)
        sys.exit(1)
