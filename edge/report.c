/*
 * report.c - a pod's run record and its pod.report (report.h). Every
 * phase report is queued in the same transaction as the run record it
 * describes, so a crash never loses one or makes one twice.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "report.h"
#include "sender.h"
#include "utf8.h"

/* A pod.report (the generated type: its map is counted from the has_
 * flags, and checked against the schema before it is queued). */
static int
pack_report(msgpack_sbuffer *sb, const char *pod, uint32_t attempt,
            const char *phase, int code, int sig, const char *ip,
            const char *reason) {
  bus_ev_pod_report r = {.pod = bus_str_of(pod),
                         .phase = bus_str_of(phase),
                         .has_attempt = 1,
                         .attempt = attempt,
                         .has_exitCode = code >= 0,
                         .exitCode = code > 255 ? 255 : code,
                         .has_signal = sig > 0,
                         .signal = (uint64_t)(sig > 64 ? 64 : sig),
                         .has_localIP = ip && *ip,
                         .localIP = bus_str_of(ip),
                         .has_reason = reason && *reason};
  if (r.has_reason)
    r.reason = (bus_str){reason,
                         (uint32_t)edge_utf8_cut(reason, strlen(reason), 1000)};
  return bus_pod_report_pack(sb, &r);
}

/* Record the run and queue its report (with the pod's localIP ip, when
 * not NULL) in one transaction. */
int
edge_record(edge_agent *a, const char *pod, const edge_run *r,
            const char *phase, int code, int sig, const char *ip,
            const char *reason) {
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = bus_subj_pod_report(subject, sizeof subject, a->cfg.node, pod);
  if (!rc && phase &&
      pack_report(&sb, pod, r->attempt, phase, code, sig, ip, reason) < 0) {
    edge_logf("error", subject, "cannot report %s: %s", phase,
              bus_last_error());
    phase = NULL; /* the run is recorded all the same */
  }
  edge_msg m = {subject, "pod.report", sb.data, sb.size};
  if (!rc)
    rc = edge_store_run_put(a->store, pod, r, phase ? &m : NULL);
  msgpack_sbuffer_destroy(&sb);
  if (rc)
    edge_logf("error", subject, "cannot record %s: %s", phase ? phase : "run",
              bus_last_error());
  else {
    if (phase)
      edge_logf("info", subject, "attempt %u %s%s%s", r->attempt, phase,
                reason && *reason ? ": " : "", reason ? reason : "");
    edge_sender_wake(a);
  }
  return rc;
}
