/*
 * root.h - for the tests that need root (network namespaces, veths,
 * nftables, an sshd that switches users). Without it they skip, saying
 * "needs root", which ctest (label root) reports as skipped rather than
 * passed or failed. CI runs them as root.
 */
#ifndef LT_ROOT_H
#define LT_ROOT_H

#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bus.h"
#include "podnet.h"
#include "proc.h"

#define lt_need_root(what)                                                     \
  do {                                                                         \
    if (geteuid() != 0)                                                        \
      cr_skip_test("needs root (%s): run it as root, as CI does", what);       \
  } while (0)

/* Move the calling thread into a new network namespace, lkt-<pid>-<tag>
 * (made afresh; its name into ns): what the test makes there is its own,
 * beside other users of the machine. */
static inline void
lt_enter_new_netns(char ns[PODNET_NS_MAX], const char *tag) {
  snprintf(ns, PODNET_NS_MAX, "lkt-%d-%s", (int)getpid(), tag);
  podnet_ns_delete(ns);
  cr_assert_eq(podnet_ns_create(ns), 0, "%s", bus_last_error());
  int fd = podnet_ns_open(ns);
  cr_assert_geq(fd, 0, "%s", bus_last_error());
  cr_assert_eq(setns(fd, CLONE_NEWNET), 0, "setns: %s", strerror(errno));
  close(fd);
}

/* What still runs in pod's namespace (a test's pod: pods outlive their
 * agent by design) killed, and the namespace removed; nothing when there
 * is none. */
static inline void
lt_pod_ns_gone(const char *pod) {
  char ns[PODNET_NS_MAX], out[1024], err[1024];
  podnet_ns_name(pod, ns);
  if (!podnet_ns_exists(ns))
    return;
  lt_sh(out, sizeof out, err, sizeof err,
        "for p in $(ip netns pids %s); do kill -9 $p; done", ns);
  podnet_ns_delete(ns);
}

/* Pods a test runs in namespaces of their own: names unique to the run
 * (p<pid>-<tag>), remembered so teardown removes what a failed test left
 * under /run/netns. */
typedef struct lt_pods {
  char v[8][64];
  int n;
} lt_pods;

/* The name for tag (the same name again for the same tag). */
static inline const char *
lt_pod_name(lt_pods *p, const char *tag) {
  char n[64];
  snprintf(n, sizeof n, "p%d-%s", (int)getpid(), tag);
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i], n))
      return p->v[i];
  cr_assert_lt(p->n, 8);
  snprintf(p->v[p->n], sizeof p->v[p->n], "%s", n);
  return p->v[p->n++];
}

/* Remove the namespaces of every pod named. */
static inline void
lt_pods_clean(lt_pods *p) {
  for (int i = 0; i < p->n; i++) {
    char ns[PODNET_NS_MAX];
    podnet_ns_name(p->v[i], ns);
    podnet_ns_delete(ns);
  }
}

#endif
