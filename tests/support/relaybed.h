/*
 * relaybed.h - what the Domain tests start from, as root: the test moved
 * into a network namespace of its own, then `larkctl up --relay --nodes 2
 * --domain D` there (clusters c1 and c2, the relay hub, a relay per node),
 * and one Job whose name carries the test's pid. Whatever the test made
 * is removed at its end and at exit (a failed setup skips a suite's
 * teardown): the platform, the Job's pods' namespaces (pods outlive their
 * agent by design) and the test's own namespace. One bed a test process.
 */
#ifndef LT_RELAYBED_H
#define LT_RELAYBED_H

#include <stdlib.h>

#include "platform.h"
#include "root.h"

typedef struct lt_relaybed {
  lt_platform plat;
  char self_ns[PODNET_NS_MAX];
  char job[64];            /* <prefix><pid> */
  const char *const *pods; /* the Job's pods: <job>-<pods[i]> */
  int npods;
} lt_relaybed;

/* The bed atexit cleans up. */
static lt_relaybed *lt_relaybed_now;

/* Everything the bed made, whatever point it reached. */
static inline void
lt_relaybed_cleanup(void) {
  lt_relaybed *b = lt_relaybed_now;
  if (!b)
    return;
  lt_platform_stop(&b->plat);
  for (int i = 0; b->job[0] && i < b->npods; i++) {
    char pod[128];
    snprintf(pod, sizeof pod, "%s-%s", b->job, b->pods[i]);
    lt_pod_ns_gone(pod);
  }
  if (b->self_ns[0])
    podnet_ns_delete(b->self_ns);
  b->self_ns[0] = 0;
  lt_platform_remove(&b->plat);
}

/* Skips the test without root (why: what it needs it for); else the
 * test's own namespace and the platform's directory (tag), and the Job's
 * name, prefix<pid>, with its npods pods. */
static inline void
lt_relaybed_init(lt_relaybed *b, const char *why, const char *tag,
                 const char *prefix, const char *const pods[], int npods) {
  lt_need_root(why);
  lt_relaybed_now = b;
  atexit(lt_relaybed_cleanup);
  lt_enter_new_netns(b->self_ns, tag);
  lt_platform_init(&b->plat, tag);
  snprintf(b->job, sizeof b->job, "%s%d", prefix, (int)getpid());
  b->pods = pods;
  b->npods = npods;
}

/* `larkctl up --relay --nodes 2 --domain domain`: fails the test unless
 * it is ready. */
static inline void
lt_relaybed_up(lt_relaybed *b, const char *domain) {
  const char *const extra[] = {"--relay",  "--nodes", "2",
                               "--domain", domain,    NULL};
  int rc = lt_platform_start(&b->plat, extra, 60);
  cr_assert_gt(b->plat.pid, 0);
  cr_assert_eq(rc, 0, "larkctl up --relay is not ready (see %s)",
               b->plat.up_log);
}

/* The Job deleted and `larkctl up` stopped, when it runs, then all
 * cleaned up: larkctl up's wait status (0 when it was not running). */
static inline int
lt_relaybed_down(lt_relaybed *b) {
  int st = 0;
  if (b->plat.pid > 0) {
    char out[4096], err[4096];
    lt_larkctl(&b->plat, out, sizeof out, err, sizeof err, "delete job %s",
               b->job);
    st = lt_platform_stop(&b->plat);
  }
  lt_relaybed_cleanup();
  return st;
}

#endif
