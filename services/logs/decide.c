/*
 * decide.c - the routing of one ingress batch, decided from the view
 * alone.
 *
 * logs_route decides whether a node may publish a pod's lines: the <node>
 * token of the ingress subject is the sender (the broker lets a node
 * publish only under its own token), and it must be the node the pod was
 * last bound to. Nothing else in the body is trusted: job, task and node
 * of the republished batch come from the view.
 */
#include <stdio.h>
#include <string.h>

#include "logs-int.h"

/* lark.in.<node>.logs.<pod>: both tokens non-empty, pod the last. */
static int
split_ingress(const char *subject, char *node, char *pod) {
  if (strncmp(subject, "lark.in.", 8))
    return -1;
  const char *n = subject + 8, *dot = strchr(n, '.');
  if (!dot || dot == n || (size_t)(dot - n) >= LOGS_NAME_SZ ||
      strncmp(dot, ".logs.", 6))
    return -1;
  const char *p = dot + 6;
  if (!*p || strchr(p, '.') || strlen(p) >= LOGS_DNAME_SZ)
    return -1;
  bus_str_copy((bus_str){n, (uint32_t)(dot - n)}, node, LOGS_NAME_SZ);
  strcpy(pod, p);
  return 0;
}

int
logs_route(bus_txn *t, const char *subject, const bus_event *ev,
           char *out_subject, size_t cap, msgpack_sbuffer *out) {
  char node[LOGS_NAME_SZ], pod[LOGS_DNAME_SZ], body_pod[LOGS_DNAME_SZ] = "";
  if (split_ingress(subject, node, pod))
    return bus_error(BUS_EINVAL, "not lark.in.<node>.logs.<pod>");
  const bus_ev_log_batch *in = bus_as_log_batch(ev);
  if (!in)
    return bus_error(BUS_EINVAL, "expected log.batch, got %s",
                     ev && ev->type ? ev->type : "nothing");
  bus_str_copy(in->pod, body_pod, sizeof body_pod);
  if (strcmp(body_pod, pod))
    return bus_error(BUS_EINVAL, "the batch names pod %s on the subject of %s",
                     body_pod, pod);
  logs_binding b;
  int rc = logs_binding_get(t, pod, &b);
  if (rc == BUS_ENOT_FOUND || (!rc && strcmp(b.node, node)))
    return bus_error(BUS_EDENIED, "pod %s is not bound to node %s", pod, node);
  if (rc)
    return rc;
  if ((rc = bus_subj_log_batch_log(out_subject, cap, b.job, b.task, pod)))
    return rc;
  /* job, task and node from the view; the lines as the node sent them */
  bus_ev_log_batch o = *in;
  o.has_job = o.has_task = o.has_node = o.has_attempt = 1;
  o.job = bus_str_of(b.job);
  o.task = bus_str_of(b.task);
  o.node = bus_str_of(node);
  o.attempt = in->has_attempt ? in->attempt : b.attempt;
  return bus_log_batch_pack(out, &o);
}
