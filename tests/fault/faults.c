/*
 * faults.c - the faults: nats-server killed with -9, services and edge
 * agents killed with -9 or paused (SIGSTOP, then SIGCONT after a while),
 * at random moments drawn from the seed.
 *
 * `larkctl up` restarts whatever dies, the broker too, on the same port
 * and store; the harness waits for a killed broker's successor before
 * the next broker kill, so each kill hits a running server. In a cluster
 * one server is killed at a time: half of the kills go to the server
 * that leads LARK_EVENTS (from the stream's info), the others to a
 * random one. A paused process is always resumed before this thread
 * ends, whatever happens.
 */
#include "fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json.h"

static const char *const services[] = {"lark-catalog", "lark-scheduler",
                                       "lark-dag",     "lark-ipam",
                                       "lark-signer",  "lark-logs"};
enum { NSERVICES = sizeof services / sizeof services[0] };

/* The server leading LARK_EVENTS ("lark-2"), from the stream's info;
 * "" when unknown (no answer while a leader is being elected). */
static void
events_leader(fh *h, char *out, size_t cap) {
  out[0] = 0;
  bus_conn *c = fh_connect(h, "admin", NULL, 0);
  if (!c)
    return;
  json_t *j = lt_request_json(c, "$JS.API.STREAM.INFO.LARK_EVENTS", "{}");
  const char *l = json_string_value(
      json_object_get(json_object_get(j, "cluster"), "leader"));
  if (l)
    snprintf(out, cap, "%s", l);
  json_decref(j);
  bus_conn_close(c);
}

/* Wait up to seconds for a broker process other than old to run. */
static int
wait_broker_back(fh *h, pid_t old, const char *conf, int seconds) {
  pid_t p[4];
  for (int t = 0; t < seconds * 10; t++) {
    int n = fh_children(h, "nats-server", conf, p, 4);
    for (int i = 0; i < n; i++)
      if (p[i] != old)
        return 0;
    fh_sleep_ms(100);
  }
  return -1;
}

static void
kill_broker(fh *h, fh_rng *r) {
  char conf[80] = "", leader[64];
  if (h->cluster) {
    int pick = fh_between(r, 1, 3);
    events_leader(h, leader, sizeof leader);
    if (fh_between(r, 0, 1) && leader[0])
      snprintf(conf, sizeof conf, "/%s.conf", leader);
    else
      snprintf(conf, sizeof conf, "/lark-%d.conf", pick);
  }
  pid_t p[4];
  if (fh_children(h, "nats-server", conf[0] ? conf : NULL, p, 4) < 1) {
    fh_log(h, "faults: no nats-server %s to kill", conf);
    return;
  }
  kill(p[0], SIGKILL);
  pthread_mutex_lock(&h->mu);
  int k = ++h->n.broker_kills;
  pthread_mutex_unlock(&h->mu);
  fh_log(h, "faults: kill -9 nats-server%s (pid %d), broker kill %d", conf,
         (int)p[0], k);
  if (wait_broker_back(h, p[0], conf[0] ? conf : NULL, 90) < 0)
    fh_log(h, "faults: no nats-server came back within 90 s");
}

/* A service or an edge agent: its pid, and its name into what. */
static pid_t
pick_target(fh *h, fh_rng *r, char *what, size_t cap) {
  pid_t p[4];
  int i = fh_between(r, 0, NSERVICES + h->nodes - 1);
  if (i < NSERVICES) {
    snprintf(what, cap, "%s", services[i]);
    return fh_children(h, services[i], NULL, p, 4) ? p[0] : 0;
  }
  char arg[48];
  snprintf(what, cap, "lark-edge node-%d", i - NSERVICES + 1);
  snprintf(arg, sizeof arg, "--node node-%d", i - NSERVICES + 1);
  return fh_children(h, "lark-edge", arg, p, 4) ? p[0] : 0;
}

static void
hit_process(fh *h, fh_rng *r) {
  char what[64];
  pid_t pid = pick_target(h, r, what, sizeof what);
  int pause = fh_between(r, 0, 2) == 0;
  int ms = fh_between(r, 500, 8000); /* under the 15 s node timeout */
  if (pid <= 0) {
    fh_log(h, "faults: %s is not running (restarting?)", what);
    return;
  }
  if (!pause) {
    kill(pid, SIGKILL);
    pthread_mutex_lock(&h->mu);
    *(strstr(what, "edge") ? &h->n.edge_kills : &h->n.service_kills) += 1;
    pthread_mutex_unlock(&h->mu);
    fh_log(h, "faults: kill -9 %s (pid %d)", what, (int)pid);
    return;
  }
  kill(pid, SIGSTOP);
  fh_log(h, "faults: SIGSTOP %s (pid %d) for %d ms", what, (int)pid, ms);
  fh_sleep_ms(ms);
  kill(pid, SIGCONT);
  pthread_mutex_lock(&h->mu);
  h->n.pauses++;
  pthread_mutex_unlock(&h->mu);
}

/* Sleep ms in steps, ending early when the round stops. */
static void
nap(fh *h, int ms) {
  for (; ms > 0 && !h->stop; ms -= 100)
    fh_sleep_ms(100);
}

void *
fh_faults_main(void *arg) {
  fh *h = arg;
  fh_rng r;
  fh_rng_init(&r, h->seed, 2000);
  int brokers = h->broker_kills, others = h->service_faults;
  int total = brokers + others;
  /* spread the faults over the round, leaving its last fifth calm */
  int gap_ms = total ? h->duration_s * 800 / total : 0;
  nap(h, fh_between(&r, 2000, 5000));
  while (!h->stop && (brokers || others)) {
    int broker = brokers && fh_between(&r, 1, brokers + others) <= brokers;
    if (broker) {
      brokers--;
      kill_broker(h, &r);
    } else {
      others--;
      hit_process(h, &r);
    }
    nap(h, fh_between(&r, gap_ms / 2, gap_ms * 3 / 2));
  }
  return NULL;
}
