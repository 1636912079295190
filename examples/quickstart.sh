#!/usr/bin/env bash
# The first thing to run against a local platform (`larkctl up --nodes 2`):
# a Workflow run to Succeeded on local edge nodes and its logs, a training
# script's reports, the audit trail, the services' state, and views rebuilt
# from the stream and compared with the live ones.
#
#   LARKCTL=./build/plain/bin/larkctl examples/quickstart.sh
set -euo pipefail
LARKCTL=${LARKCTL:-larkctl}
JOB=${JOB:-train-1}

step() { printf '\n$ %s\n' "$*"; "$@"; }

# 1. A Workflow of two Jobs (train -> eval) on the local edge nodes that
#    `larkctl up --nodes 2` started: lark-dag submits each Job when its
#    dependencies succeed, lark-scheduler places its pods, the edges run them.
step "$LARKCTL" get nodes
step "$LARKCTL" apply -f "$(dirname "$0")/rl-workflow.yaml"
step "$LARKCTL" wait workflow rl --for Succeeded --timeout 120s
step "$LARKCTL" get workflows
step "$LARKCTL" get jobs
step "$LARKCTL" get pods -o wide
step "$LARKCTL" logs job rl-train

# 2. A training script reports metrics and a checkpoint for its job. Each
#    report is a run.reported event on lark.run.<job> (LARK_RUNS).
for s in 100 200 300; do
  step "$LARKCTL" emit "$JOB" metric --data "{\"step\":$s,\"reward\":0.$((s / 100))}"
done
step "$LARKCTL" emit "$JOB" checkpoint \
  --data "{\"step\":300,\"uri\":\"file:///ckpt/$JOB/300\"}"

# 3. The audit trail: the Workflow's events, then that job's reports.
step "$LARKCTL" tail 'lark.ev.workflow.>'
step "$LARKCTL" tail "lark.run.$JOB" --type run.reported -o json

# 4. Every service: up or down, applied sequence, lag.
step "$LARKCTL" status

# 5. Views rebuilt from the stream equal the live ones.
step "$LARKCTL" replay scheduler --verify
step "$LARKCTL" replay catalog --verify
