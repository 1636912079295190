#!/usr/bin/env bash
# The first thing to run against a local platform (`larkctl up`): a training
# script's reports, the audit trail, the services' state, and a view
# rebuilt from the stream and compared with the live one.
#
#   LARKCTL=./build/plain/bin/larkctl examples/quickstart.sh
set -euo pipefail
LARKCTL=${LARKCTL:-larkctl}
JOB=${JOB:-train-1}

step() { printf '\n$ %s\n' "$*"; "$@"; }

# 1. A training script reports metrics and a checkpoint for its job. Each
#    report is a run.reported event on lark.run.<job> (LARK_RUNS).
for s in 100 200 300; do
  step "$LARKCTL" emit "$JOB" metric --data "{\"step\":$s,\"reward\":0.$((s / 100))}"
done
step "$LARKCTL" emit "$JOB" checkpoint \
  --data "{\"step\":300,\"uri\":\"file:///ckpt/$JOB/300\"}"

# 2. The audit trail of that job, as text and as JSON lines.
step "$LARKCTL" tail "lark.run.$JOB"
step "$LARKCTL" tail "lark.run.$JOB" --type run.reported -o json

# 3. Every service: up or down, applied sequence, lag.
step "$LARKCTL" status

# 4. The catalog view rebuilt from the stream equals the live one.
step "$LARKCTL" replay catalog --verify
