#!/usr/bin/env python3
"""The learner of examples/rl-engine.yaml: a stand-in that trains.

Role Actor: each step it takes part in update_dataset, train and
sync_weights. In train it writes that step's weights (version step + 1),
1 MiB of bytes that depend only on the Job and the version, into its
working directory and publishes them by reference: the bytes stay on its
node, the bus carries the version, the size and the sha256, and the
samplers' nodes fetch them. The samplers check the bytes against
weights_bytes() themselves.

RL_STEPS (default 4) is how many steps it runs; it then exits 0.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "libbus", "python"))
import larkbus  # noqa: E402

WEIGHTS_SIZE = 1 << 20


def weights_bytes(job, version):
    """The weights of version: a SHA-256 chain seeded by (job, version)."""
    block = hashlib.sha256(("%s:%d" % (job, version)).encode()).digest()
    out = bytearray()
    while len(out) < WEIGHTS_SIZE:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:WEIGHTS_SIZE])


def train(run, job, step):
    """Write and publish version step + 1; its answer from the node."""
    version = step + 1
    path = os.path.join(os.getcwd(), "weights-%d.bin" % version)
    with open(path, "wb") as f:
        f.write(weights_bytes(job, version))
    pub = run.publish_weights(version, path)
    print("step %d: published weights version %d, %d bytes, sha256 %s" % (
        step, version, pub.get("size", 0), pub.get("sha256", "?")),
        flush=True)
    return version


def main():
    job = os.environ.get("LARK_JOB", "rl")
    steps = int(os.environ.get("RL_STEPS", "4"))
    run = larkbus.Run()
    step = 0
    while step < steps:
        # a retried learner joins at the step the Job is at
        step = run.wait("update_dataset", step)["step"]
        run.done("update_dataset", step, samples=64 * (step + 1))
        run.wait("train", step)
        train(run, job, step)
        run.done("train", step, loss=round(1.0 / (step + 1), 4))
        run.wait("sync_weights", step)
        run.done("sync_weights", step)
        step += 1
    print("learner: %d steps done" % steps, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
