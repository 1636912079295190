#!/usr/bin/env python3
"""A sampler of examples/rl-engine.yaml: a stand-in that rolls out.

Role Rollout: each step it waits for rollout, first loading the weights
version the step carries when it is newer than the one it holds
(wait_weights gives the node's local copy), checks the file's sha256
against what the node says and against the bytes the learner writes
(rl_learner.weights_bytes), and reports a reward. In sequential mode it
also takes part in sync_weights: it loads the new version and reports it
loaded; in pipeline mode it does not (its next rollout carries the
version to load).

RL_STEPS (default 4) is how many steps it runs; it then exits 0.
RL_ROLLOUT_SECONDS (default 0) is how long each rollout takes.
"""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "libbus", "python"))
import larkbus  # noqa: E402
from rl_learner import weights_bytes  # noqa: E402


def load(run, job, version):
    """Load version (or newer); the version loaded. Exits on bad bytes."""
    path = run.wait_weights(version)
    got = run.last_weights
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    want = hashlib.sha256(weights_bytes(job, got["version"])).hexdigest()
    if sha != got["sha256"] or sha != want:
        sys.exit("weights version %d at %s: sha256 %s, node says %s, "
                 "learner wrote %s" % (got["version"], path, sha,
                                       got["sha256"], want))
    print("loaded weights version %d, sha256 %s" % (got["version"], sha),
          flush=True)
    return got["version"]


def main():
    job = os.environ.get("LARK_JOB", "rl")
    steps = int(os.environ.get("RL_STEPS", "4"))
    work = float(os.environ.get("RL_ROLLOUT_SECONDS", "0"))
    run = larkbus.Run()
    held = step = 0
    while step < steps:
        r = run.wait("rollout", step)
        step = r["step"]  # a retried sampler joins at the Job's step
        if r.get("weights", 0) > held:
            held = load(run, job, r["weights"])
        time.sleep(work)  # the environment's steps
        reward = round(0.25 * step + 0.01 * held, 4)
        run.done("rollout", step, reward=reward)
        print("step %d: rolled out with weights %d, reward %s" % (
            step, held, reward), flush=True)
        if r.get("mode", "sequential") == "sequential":
            s = run.wait("sync_weights", step)
            if s.get("weights", 0) > held:
                held = load(run, job, s["weights"])
            run.done("sync_weights", step)
        step += 1
    print("sampler: %d steps done" % steps, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
