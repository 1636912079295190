/*
 * peer.c - the pod behind a local socket's peer (peer.h). The running
 * pods' shims come from the store's run records (pid and start time,
 * written before the agent reports the pod running), each checked
 * against /proc so a pid reused by another process is no shim. The
 * peer's ancestors are then walked through /proc/<pid>/stat up to init:
 * a process a pod forked, however deep and whatever session it made, is
 * still a descendant of its shim unless it was re-parented away, and
 * such a process is no pod's. edge_pod_holds reads the pod's stored
 * desired state for the devices it is bound to.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "peer.h"
#include "proc.h"
#include "store.h"

enum { DEPTH_MAX = 256 };

/* The peer's line of ancestors, and the nearest running shim on it. */
typedef struct lineage {
  pid_t pid[DEPTH_MAX]; /* pid[0] the peer, pid[i+1] pid[i]'s parent */
  int n;
  int best; /* index of the nearest shim found, n when none */
  char *pod;
  size_t cap;
} lineage;

static void
shim_of(const char *pod, const void *val, void *ud) {
  const edge_run *r = val;
  lineage *l = ud;
  if (r->state != EDGE_RUN_RUNNING || r->pid <= 1 || strlen(pod) >= l->cap)
    return;
  for (int i = 0; i < l->best; i++)
    if (l->pid[i] == r->pid &&
        edge_proc_start_ticks(r->pid) == r->start_ticks) {
      /* (a pid whose start time differs ended: it may be another's now) */
      l->best = i;
      strcpy(l->pod, pod);
      return;
    }
}

int
edge_peer_pod_of_pid(edge_agent *a, pid_t pid, char *pod, size_t cap) {
  lineage l = {.pod = pod, .cap = cap};
  for (; pid > 1 && l.n < DEPTH_MAX; pid = edge_proc_parent(pid))
    l.pid[l.n++] = pid;
  l.best = l.n;
  if (!l.n || edge_store_run_each(a->store, shim_of, &l) || l.best == l.n)
    return -1;
  return 0;
}

int
edge_peer_pod(edge_agent *a, int fd, char *pod, size_t cap) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
      len != sizeof cred)
    return -1;
  return edge_peer_pod_of_pid(a, cred.pid, pod, cap);
}

int
edge_pod_holds(edge_agent *a, const char *pod, const char *bound) {
  void *data = NULL;
  size_t len = 0;
  if (edge_store_desired_get(a->store, pod, &data, &len))
    return 0;
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object o;
  bus_ev_pod_desired d;
  int held = 0;
  if (msgpack_unpack(data, len, NULL, &z, &o) >= 0 &&
      !bus_pod_desired_unpack(&o, &z, &d) && bus_str_eq(d.desired, "Running"))
    for (uint32_t i = 0; d.has_boundDevices && i < d.boundDevices.n; i++)
      held |= bus_str_eq(d.boundDevices.v[i], bound);
  msgpack_zone_destroy(&z);
  free(data);
  return held;
}
