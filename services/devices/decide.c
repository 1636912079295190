/*
 * decide.c - what lark-devices decides after each event and on each tick:
 *
 *   - a robot whose holder ended while it should run is stopped: one
 *     robot.commanded {op: stop} on its subject, on top of the version
 *     decide saw (the broker's check), once per version (marked);
 *   - each robot.desired queued by apply (`desq`) goes to the robot's
 *     node stream, lark.node.<node>.robot.<robot>, in the order apply
 *     queued them, once (bus_txn_sendq: the last key sent is in _effects,
 *     "o"), with version = the sequence of the robot.commanded that
 *     decided it.
 *
 * Every decision is built from the view alone and its id derived from
 * what it was decided on, so deciding again after a crash writes the
 * same id and the broker drops the copy. A node stream not there (the
 * scheduler makes it when it takes the node's registration) keeps the
 * outbox entry, which goes out at a later pass; the service's repair
 * makes it meanwhile (svc_node_streams_repair).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "larkdevices-int.h"

typedef struct pass {
  bus_txn *t;
  bus_decider by; /* lark-devices, at the cause's time or now */
  bus_sendq out;  /* desq, sent in order */
} pass;

/* ------------------------------------------------------------ holders */

static int
stop_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  pass *p = ud;
  char key[DEV_KEY_SZ], pod[DEV_DNAME_SZ], src[DEV_KEY_SZ + 64];
  char subject[BUS_SUBJECT_MAX], reason[DEV_DNAME_SZ + 32];
  if (kl >= sizeof key || vl >= sizeof pod)
    return 0;
  memcpy(key, k, kl);
  key[kl] = 0;
  memcpy(pod, v, vl);
  pod[vl] = 0;
  char *slash = strchr(key, '/');
  dev_rec d;
  if (!slash)
    return 0;
  *slash = 0;
  if (dev_get(p->t, key, slash + 1, &d) || !d.running)
    return 0;
  bus_version ver;
  int rc = bus_subj_robot_commanded(subject, sizeof subject, d.node, d.name);
  if (!rc)
    rc = bus_txn_version(p->t, subject, &ver);
  if (rc)
    return rc;
  snprintf(src, sizeof src, "holder-ended:%s/%s:%llu", d.node, d.name,
           (unsigned long long)ver.seq);
  snprintf(reason, sizeof reason, "holder pod %s ended", pod);
  bus_ev_robot_commanded e = {.node = bus_str_of(d.node),
                              .robot = bus_str_of(d.name),
                              .op = BUS_STR("stop"),
                              .has_reason = 1,
                              .reason = bus_str_of(reason)};
  return bus_txn_emit_once(p->t, &p->by, subject, BUS_T_ROBOT_COMMANDED, &e,
                           src, ver.seq);
}

/* ----------------------------------------------------------- dispatch */

static int
send_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  pass *p = ud;
  char key[DEV_KEY_SZ], subject[BUS_SUBJECT_MAX], src[DEV_KEY_SZ + 64];
  if (kl <= 8 || kl > 8 + DEV_KEY_SZ)
    return 0;
  bus_sendq_sent(&p->out, k, kl);
  memcpy(key, (const char *)k + 8, kl - 8);
  key[kl - 8] = 0;
  char *slash = strchr(key, '/');
  dev_rec d;
  if (!slash)
    return 0;
  *slash = 0;
  if (dev_get(p->t, key, slash + 1, &d))
    return 0;
  uint64_t seq = bus_get_be64(k);
  bus_ev_robot_desired e = {.robot = bus_str_of(d.name),
                            .has_version = 1,
                            .version = seq,
                            .desired = d.running ? BUS_STR("Running")
                                                 : BUS_STR("Stopped"),
                            .has_mode = d.mode[0] != 0,
                            .mode = bus_str_of(d.mode),
                            .has_resets = 1,
                            .resets = d.resets,
                            .has_holder = d.holder[0] != 0,
                            .holder = bus_str_of(d.holder),
                            .has_request = d.request[0] != 0,
                            .request = bus_str_of(d.request)};
  int rc = bus_subj_robot_desired(subject, sizeof subject, d.node, d.name);
  snprintf(src, sizeof src, "robot-desired:%s/%s:%llu", d.node, d.name,
           (unsigned long long)seq);
  return rc ? rc
            : bus_txn_emit_decided(p->t, &p->by, subject, BUS_T_ROBOT_DESIRED,
                                   &e, src, 0, BUS_APPEND_NOCHECK);
}

int
devices_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)ud;
  pass p = {.t = t,
            .by = {.actor = DEV_ACTOR,
                   .cause = "",
                   .ts = cause && cause->ts ? cause->ts : now}};
  int rc = bus_txn_scan(t, "ending", NULL, 0, stop_one, &p);
  return rc ? rc : bus_txn_sendq(t, "desq", "o", &p.out, send_one, &p);
}
