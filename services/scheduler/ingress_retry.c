/*
 * ingress_retry.c - what the ingress's loop (ingress.c) and its run-report
 * batches (ingress_runs.c) share: a log line, which broker errors are
 * transient (the message is tried again, in place), and the wait between
 * tries.
 */
#include <stdio.h>

#include "ingress-int.h"

void
sched_ingress_log(const char *subject, const char *what, const char *detail) {
  fprintf(stderr, "lark-scheduler ingress subject=%s %s%s\n", subject, what,
          detail ? detail : "");
}

/* Busy: a report whose subject others moved on at every try
 * (bus_append_rebased); not refused. */
int
sched_ingress_transient(int rc) {
  return rc == BUS_ETIMEOUT || rc == BUS_ECONN || rc == BUS_ENO_STREAM ||
         rc == BUS_EBUSY;
}

int
sched_ingress_nap(const bus_worker *w, int *delay_ms, const char *subject) {
  sched_ingress_log(subject,
                    "not stored yet, trying again: ", bus_last_error());
  bus_worker_nap(w, *delay_ms);
  *delay_ms = *delay_ms < 1000 ? *delay_ms * 2 : 2000;
  return bus_worker_stopping(w);
}
