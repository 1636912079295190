/*
 * records.c - lark-logs' rows: a pod's binding (fixed layout, zeroed
 * before filling, so equal bindings are equal bytes) in "pods", and a
 * Job's pods indexed under "<job>/<pod>" in "jobs" (names hold no '/', so
 * the prefix scan on "<job>/" finds exactly them).
 */
#include <stdio.h>
#include <string.h>

#include "logs-int.h"

int
logs_binding_get(bus_txn *t, const char *pod, logs_binding *b) {
  const void *val;
  size_t vlen;
  int rc = bus_txn_get(t, T_PODS, pod, strlen(pod), &val, &vlen);
  if (rc)
    return rc;
  if (vlen != sizeof *b)
    return bus_error(BUS_ECORRUPT, "binding of %s has %zu bytes", pod, vlen);
  memcpy(b, val, sizeof *b); /* LMDB values need not be aligned */
  return 0;
}

int
logs__binding_put(bus_txn *t, const logs_binding *b) {
  return bus_txn_put(t, T_PODS, b->pod, strlen(b->pod), b, sizeof *b);
}

int
logs__index_key(char *key, size_t cap, const char *job, const char *pod) {
  int n = snprintf(key, cap, "%s/%s", job, pod);
  return n < 0 || (size_t)n >= cap ? -1 : n;
}
