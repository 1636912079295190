/*
 * main.c - lark-engine: the stage coordinator of the Jobs' RL loops.
 *
 *   lark-engine --url URL --creds FILE --data DIR [--name INSTANCE]
 *
 * Four things run at once: the service loop over LARK_EVENTS (apply,
 * decide, outbox: stage.started, engine.nodes, engine.ended, and the
 * projections to the nodes' streams), the query handlers (stages.*,
 * peers.*; their own threads, reading the view), the ingress thread
 * (stage.report and weights.report on lark.in.*.engine.>) and the purger,
 * which removes an ended run's projections from its nodes' streams a
 * while after the run's end went out (the nodes read the end first) and
 * logs the ingress's counters (accepted, duplicates, refused) when they
 * moved, at most once a minute. A
 * node's stream missing when a projection goes out is made here.
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out (a
 * supervisor restarts it; the view resumes from its applied sequence,
 * the outbox from what it had not sent, the ingress from its durable
 * consumer).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "larkengine.h"
#include "svc.h"

#define PURGE_AFTER_MS 5000
#define PURGED_MAX 4096

static const char *const streams[] = {"LARK_EVENTS", "LARK_INGRESS", NULL};

typedef struct purged {
  char key[160]; /* job/node/seq */
  int64_t seen_ms;
  int done;
} purged;

typedef struct app {
  svc s; /* first: the svc_on_* hooks take the app as their svc */
  bus_view *view;
  engine_ingress *in;
  engine_ingress_stats said; /* the ingress's counters last logged */
  int64_t said_ms;
  pthread_t purger;
  int purger_on;
  purged *p;
  size_t np, cap;
} app;

static int
repair(svc *s, bus_view *v, void *ud) {
  (void)ud;
  return svc_node_streams_repair(s, v, "the engine's projections");
}

/* ------------------------------------------------------------ purger */

static purged *
find(app *a, const char *key) {
  for (size_t i = 0; i < a->np; i++)
    if (!strcmp(a->p[i].key, key))
      return &a->p[i];
  if (a->np >= PURGED_MAX || bus_grow(&a->p, a->np, &a->cap, sizeof *a->p, 16))
    return NULL;
  purged *p = &a->p[a->np++];
  memset(p, 0, sizeof *p);
  snprintf(p->key, sizeof p->key, "%s", key);
  p->seen_ms = bus_mono_ms();
  return p;
}

static int
purge_one(const char *job, const char *node, uint64_t seq, void *ud) {
  app *a = ud;
  char key[160], stream[BUS_NODE_STREAM_MAX], filter[BUS_SUBJECT_MAX];
  snprintf(key, sizeof key, "%s/%s/%llu", job, node, (unsigned long long)seq);
  purged *p = find(a, key);
  if (!p || p->done || bus_mono_ms() - p->seen_ms < PURGE_AFTER_MS)
    return 0;
  snprintf(filter, sizeof filter, "lark.node.%s.engine.%s.>", node, job);
  if (bus_node_stream_name(node, stream, sizeof stream))
    return p->done = 1, 0;
  int rc = bus_purge_subject(a->s.conn, stream, filter);
  p->done = rc == 0 || rc == BUS_ENO_STREAM;
  SVC_LOG(&a->s, rc ? SVC_WARN : SVC_INFO, filter, seq, "purge: %s",
          rc ? bus_last_error() : "done");
  return 0;
}

/* The ingress's counters, when they moved, at most once a minute (and
 * at the end): what it took, ignored and refused. */
static void
say_counts(app *a, int now) {
  engine_ingress_stats st;
  engine_ingress_get_stats(a->in, &st);
  if (!memcmp(&st, &a->said, sizeof st) ||
      (!now && bus_mono_ms() - a->said_ms < 60000))
    return;
  a->said = st;
  a->said_ms = bus_mono_ms();
  SVC_LOG(&a->s, SVC_INFO, "lark.in.*.engine.>", 0,
          "ingress: %llu accepted, %llu duplicates, %llu refused, %llu "
          "stage.done",
          (unsigned long long)st.accepted, (unsigned long long)st.duplicates,
          (unsigned long long)st.refused, (unsigned long long)st.batches);
}

static void *
purger(void *ud) {
  app *a = ud;
  while (!atomic_load(&a->s.stop)) {
    say_counts(a, 0);
    bus_txn *t;
    if (!bus_view_read(a->view, &t)) {
      engine_each_purge(t, purge_one, a);
      bus_txn_end(t);
    }
    for (int i = 0; i < 10 && !atomic_load(&a->s.stop); i++)
      bus_sleep_ms(100);
  }
  return NULL;
}

/* ------------------------------------------------------------- frame */

static int
start(svc *s, bus_view *v, void *ud) {
  app *a = ud;
  engine_ingress_opts io;
  engine_ingress_opts_init(&io);
  io.log = svc_on_ingress_log;
  io.ud = a;
  a->view = v;
  int rc = engine_ingress_start(s->conn, v, &io, &a->in);
  if (rc)
    return rc;
  SVC_LOG(s, SVC_INFO, "lark.in.*.engine.>", 0, "ingress running");
  a->purger_on = pthread_create(&a->purger, NULL, purger, a) == 0;
  return 0;
}

static void
stop(svc *s, bus_view *v, void *ud) {
  (void)v;
  app *a = ud;
  atomic_store(&s->stop, 1);
  if (a->purger_on)
    pthread_join(a->purger, NULL);
  if (a->in)
    say_counts(a, 1);
  engine_ingress_stop(a->in);
  free(a->p);
}

int
main(int argc, char **argv) {
  static app a;
  bus_verbs verbs = engine_verbs;
  verbs.on_done = svc_on_cmd_done;
  svc_view_opts o = {.verbs = &verbs,
                     .ud = &a,
                     .view = &a.view,
                     .tick_ms = 500,
                     .start = start,
                     .stop = stop,
                     .repair = repair};
  engine_view_def(&o.def);
  return svc_main(&a.s, "engine", argc, argv, streams, &o);
}
