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

/* A pod.report {pod, phase, attempt, exitCode?, signal?, localIP?,
 * reason?}. */
static void
pack_report(msgpack_sbuffer *sb, const char *pod, uint32_t attempt,
            const char *phase, int code, int sig, const char *ip,
            const char *reason) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  int n = 3 + (code >= 0) + (sig > 0) + (ip && *ip) + (reason && *reason);
  msgpack_pack_map(&pk, (uint32_t)n);
  msgpack_pack_str_with_body(&pk, "pod", 3);
  msgpack_pack_str_with_body(&pk, pod, strlen(pod));
  msgpack_pack_str_with_body(&pk, "phase", 5);
  msgpack_pack_str_with_body(&pk, phase, strlen(phase));
  msgpack_pack_str_with_body(&pk, "attempt", 7);
  msgpack_pack_uint32(&pk, attempt);
  if (code >= 0) {
    msgpack_pack_str_with_body(&pk, "exitCode", 8);
    msgpack_pack_int32(&pk, code > 255 ? 255 : code);
  }
  if (sig > 0) {
    msgpack_pack_str_with_body(&pk, "signal", 6);
    msgpack_pack_uint32(&pk, (uint32_t)(sig > 64 ? 64 : sig));
  }
  if (ip && *ip) {
    msgpack_pack_str_with_body(&pk, "localIP", 7);
    msgpack_pack_str_with_body(&pk, ip, strlen(ip));
  }
  if (reason && *reason) {
    size_t l = strlen(reason);
    l = edge_utf8_cut(reason, l, 1000);
    msgpack_pack_str_with_body(&pk, "reason", 6);
    msgpack_pack_str_with_body(&pk, reason, l);
  }
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
  snprintf(subject, sizeof subject, "lark.in.%s.sched.pod.%s", a->cfg.node,
           pod);
  if (phase)
    pack_report(&sb, pod, r->attempt, phase, code, sig, ip, reason);
  edge_msg m = {subject, "pod.report", sb.data, sb.size};
  int rc = edge_store_run_put(a->store, pod, r, phase ? &m : NULL);
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
