/*
 * ingress.c - lark-engine's ingress loop on lark.in.*.engine.> (a durable
 * work-queue consumer, engine-ingress): each fetch's stage.reports are
 * checked (ingress_check.c) against one read of the view and every
 * accepted one for the same (job, stage, step) goes into one stage.done;
 * each weights.report becomes weights.published, cached or dropped. Each
 * is appended on lark.ev.engine.<job> with the broker's check on the
 * view's version (the subject's own last one when the view lags) and an
 * id derived from the first message's, so a batch delivered again after a
 * crash lands once (a pod counted twice is counted once by apply anyway).
 * A refusal is counted and logged; a report the view may not know yet (a
 * step not started, a pod not bound) is checked again once the view has
 * caught up. The batch is acked when all of it is stored or refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-ingress.h"

#define GROUPS_MAX 64

typedef struct group {
  char job[ENG_NAME_SZ];
  int stage;
  uint64_t step, prev;
  const char *first_id;
  bus_stage_done *pods;
  uint32_t n, cap;
} group;

struct engine_ingress {
  svc_ingress s;           /* first: the worker's ud */
  engine_ingress_stats st; /* under s.q.mu */
  group g[GROUPS_MAX];
  int ng;
  bus_txn *t;    /* the batch's one read of the view (first pass) */
  int later;     /* the message's verdict waits for the view */
  size_t *again; /* those messages, checked after a catch-up */
  size_t nagain, capagain;
  /* the last seq it appended, per Job: the view may not have it yet, and
   * appending on top of it spares a conflict and a read */
  struct {
    char job[ENG_NAME_SZ];
    uint64_t seq;
  } mine[GROUPS_MAX];
  int nmine;
};

void
engine_ingress_opts_init(engine_ingress_opts *o) {
  memset(o, 0, sizeof *o);
  o->durable = "engine-ingress";
  o->batch = 1024;
  o->ack_wait_ns = INT64_C(5000000000);
}

static void
counted(engine_ingress *in, uint64_t *field, uint64_t n) {
  pthread_mutex_lock(&in->s.q.mu);
  *field += n;
  pthread_mutex_unlock(&in->s.q.mu);
}

/* The slot of job's last own append. */
static uint64_t *
mine(engine_ingress *in, const char *job) {
  int i = 0;
  while (i < in->nmine && strcmp(in->mine[i].job, job))
    i++;
  if (i == GROUPS_MAX)
    i = (int)(bus_mono_ns() % GROUPS_MAX); /* forget one */
  else if (i == in->nmine)
    in->nmine++;
  if (strcmp(in->mine[i].job, job)) {
    snprintf(in->mine[i].job, sizeof in->mine[i].job, "%s", job);
    in->mine[i].seq = 0;
  }
  return &in->mine[i].seq;
}

/* Append out on job's subject at prev (or its own last append there,
 * when newer); on a conflict, at the subject's own last version. */
static int
append(engine_ingress *in, const char *job, bus_event *out, uint64_t prev,
       const char *first_id, unsigned index) {
  char subject[BUS_SUBJECT_MAX], id[33];
  int rc = bus_subj_stage_started(subject, sizeof subject, job);
  bus_event_derive_id(first_id, index, id);
  out->type = bus_type_name(out->t);
  out->id = id;
  out->ts = bus_wall_ns();
  out->actor = ENG_ACTOR;
  out->cause = first_id;
  uint64_t *last = mine(in, job), seq = 0;
  if (*last > prev)
    prev = *last;
  if (!rc)
    rc = bus_append_rebased(in->s.c, "LARK_EVENTS", subject, out, prev, 20,
                            &seq);
  if (!rc && seq)
    *last = seq;
  return rc;
}

/* ------------------------------------------------------------ checks */

typedef struct checked {
  engine_ingress *in;
  const eng_route *r;
  const bus_event *ev;
  const char *subject; /* the batch's: lives until it is acked */
  eng_verdict v;
} checked;

static int
check_in_view(bus_txn *t, void *ud) {
  checked *c = ud;
  if (c->ev->t == BUS_T_STAGE_REPORT)
    return eng_check_stage(t, c->r, bus_as_stage_report(c->ev), &c->v);
  return eng_check_weights(t, c->r, bus_as_weights_report(c->ev), &c->v);
}

/* The verdict: in the batch's read of the view (a verdict the view may
 * change waits for the second pass), or with one catch-up of the view. */
static int
check(engine_ingress *in, checked *c) {
  if (in->t) {
    int rc = check_in_view(in->t, c);
    in->later = !rc && c->v.v == ENG_NOT_YET;
    return rc;
  }
  int rc = bus_view_read_with(in->s.v, check_in_view, c);
  if (!rc && c->v.v == ENG_NOT_YET) {
    bus_view_catch_up(in->s.c, in->s.v, NULL, 5000);
    rc = bus_view_read_with(in->s.v, check_in_view, c);
  }
  return rc;
}

/* ------------------------------------------------------------ groups */

static int
flush_groups(engine_ingress *in) {
  int rc = 0;
  for (int i = 0; !rc && i < in->ng; i++) {
    group *g = &in->g[i];
    bus_ev_stage_done e = {.job = bus_str_of(g->job),
                           .stage = bus_str_of(eng_stage_names[g->stage]),
                           .step = g->step,
                           .pods = {g->pods, g->n}};
    bus_event out = {.t = BUS_T_STAGE_DONE, .typed = &e};
    if (!(rc = append(in, g->job, &out, g->prev, g->first_id, 0))) {
      counted(in, &in->st.accepted, g->n);
      counted(in, &in->st.batches, 1);
    }
  }
  if (!rc)
    in->ng = 0;
  return rc;
}

static int
add_to_group(engine_ingress *in, const checked *c) {
  const bus_ev_stage_report *rep = bus_as_stage_report(c->ev);
  char job[ENG_NAME_SZ];
  bus_str_copy(rep->job, job, sizeof job);
  int i = 0;
  while (i < in->ng &&
         (strcmp(in->g[i].job, job) || in->g[i].stage != c->v.stage ||
          in->g[i].step != c->v.step))
    i++;
  if (i == GROUPS_MAX) { /* full: out with what is there */
    int rc = flush_groups(in);
    if (rc)
      return rc;
    i = 0;
  }
  group *g = &in->g[i];
  if (i == in->ng) {
    in->ng++;
    snprintf(g->job, sizeof g->job, "%s", job);
    g->stage = c->v.stage;
    g->step = c->v.step;
    g->prev = c->v.prev;
    g->first_id = c->ev->id;
    g->n = 0;
  }
  for (uint32_t k = 0; k < g->n; k++)
    if (bus_str_eq(g->pods[k].pod, c->r->name))
      return 0; /* twice in one fetch */
  if (g->n == g->cap) {
    uint32_t cap = g->cap ? 2 * g->cap : 256;
    void *p = realloc(g->pods, cap * sizeof *g->pods);
    if (!p)
      return bus_error(-ENOMEM, "out of memory");
    g->pods = p;
    g->cap = cap;
  }
  g->pods[g->n++] =
      (bus_stage_done){.pod = rep->pod,
                       /* lark.in.<node>.: the batch's bytes */
                       .node = {c->subject + 8, (uint32_t)strlen(c->r->node)},
                       .has_attempt = rep->has_attempt,
                       .attempt = rep->attempt,
                       .has_weights = 1,
                       .weights = rep->weights,
                       .has_metrics = rep->has_metrics,
                       .metrics = rep->metrics};
  return 0;
}

/* ----------------------------------------------------------- weights */

static int
weights_event(engine_ingress *in, const checked *c) {
  const bus_ev_weights_report *r = bus_as_weights_report(c->ev);
  bus_str node = bus_str_of(c->r->node);
  bus_ev_weights_published pub = {.job = r->job,
                                  .version = r->version,
                                  .size = r->size,
                                  .sha256 = r->sha256,
                                  .pod = r->pod,
                                  .node = node,
                                  .address = r->address};
  bus_ev_weights_cached held = {.job = r->job,
                                .version = r->version,
                                .has_sha256 = 1,
                                .sha256 = r->sha256,
                                .node = node,
                                .has_address = r->has_address,
                                .address = r->address,
                                .has_bytes = r->has_size,
                                .bytes = r->size,
                                .has_from = r->has_from,
                                .from = r->from,
                                .has_ms = r->has_ms,
                                .ms = r->ms};
  bus_event out = {.t = BUS_T_WEIGHTS_PUBLISHED, .typed = &pub};
  if (bus_str_eq(r->event, "cached") || bus_str_eq(r->event, "dropped")) {
    out.t = bus_str_eq(r->event, "cached") ? BUS_T_WEIGHTS_CACHED
                                           : BUS_T_WEIGHTS_DROPPED;
    out.typed = &held; /* the two share their layout */
  }
  int rc = append(in, c->r->name, &out, c->v.prev, c->ev->id, 0);
  if (!rc)
    counted(in, &in->st.accepted, 1);
  return rc;
}

/* ------------------------------------------------------------- loop */

static void
refused(engine_ingress *in, const char *subject, const char *why) {
  counted(in, &in->st.refused, 1);
  svc_queue_say(&in->s.q, subject, "refused: %s", why);
}

static int
handle(engine_ingress *in, const char *subject, const bus_event *ev) {
  eng_route r;
  if (eng_route_parse(subject, &r))
    return refused(in, subject, bus_last_error()), 0;
  int stage = ev->t == BUS_T_STAGE_REPORT && !strcmp(r.what, "stage");
  if (!stage && !(ev->t == BUS_T_WEIGHTS_REPORT && !strcmp(r.what, "weights")))
    return refused(in, subject, "not a stage or weights report"), 0;
  checked c = {in, &r, ev, subject, {0}};
  int rc = check(in, &c);
  if (rc || in->later)
    return rc;
  if (c.v.v == ENG_DUPLICATE)
    return counted(in, &in->st.duplicates, 1), 0;
  if (c.v.v != ENG_ACCEPT)
    return refused(in, subject, c.v.why), 0;
  return stage ? add_to_group(in, &c) : weights_event(in, &c);
}

typedef struct one_try {
  engine_ingress *in;
  const char *subject;
  const bus_event *ev; /* NULL: flush the groups */
} one_try;

static int
attempt(void *ud) {
  one_try *t = ud;
  return t->ev ? handle(t->in, t->subject, t->ev) : flush_groups(t->in);
}

/* Until stored or refused for good (a refused flush drops its groups);
 * non-zero when told to stop. */
static int
until_stored(engine_ingress *in, const char *subject, const bus_event *ev) {
  one_try t = {in, subject, ev};
  int rc = svc_queue_until_stored(&in->s.q, subject, attempt, &t);
  if (rc < 0 && !ev)
    in->ng = 0;
  return rc == 1;
}

/* Each message of b (the indexes idx, or all), until stored or refused;
 * non-zero when told to stop. */
static int
pass(engine_ingress *in, bus_batch *b, const size_t *idx, size_t n) {
  for (size_t k = 0; k < n; k++) {
    size_t i = idx ? idx[k] : k;
    const char *subject;
    bus_batch_meta(b, i, &subject, NULL, NULL);
    const bus_event *ev = bus_batch_event(b, i);
    if (!ev || !ev->typed) {
      refused(in, subject, bus_strerror(bus_batch_status(b, i)));
      continue;
    }
    in->later = 0;
    if (until_stored(in, subject, ev))
      return 1;
    if (in->later &&
        !bus_grow(&in->again, in->nagain, &in->capagain, sizeof(size_t), 64))
      in->again[in->nagain++] = i;
  }
  return until_stored(in, "lark.in.*.engine.stage", NULL);
}

/* Checked in one read of the view; what it does not know yet (a step
 * just started, a pod just placed) again after a catch-up. */
static void
handle_batch(bus_worker *w, bus_batch *b, void *ud) {
  engine_ingress *in = ud;
  in->s.q.w = w;
  in->ng = 0;
  in->nagain = 0;
  if (bus_view_read(in->s.v, &in->t))
    in->t = NULL;
  int stop = pass(in, b, NULL, bus_batch_len(b));
  bus_txn_end(in->t);
  in->t = NULL;
  if (!stop && in->nagain)
    stop = pass(in, b, in->again, in->nagain);
  if (!stop)
    bus_batch_ack(b); /* else the batch comes again */
}

int
engine_ingress_start(bus_conn *c, bus_view *v, const engine_ingress_opts *o,
                     engine_ingress **out) {
  engine_ingress_opts def;
  engine_ingress_opts_init(&def);
  void *in = NULL;
  int rc = svc_ingress_start(sizeof(engine_ingress), c, v, o, &def,
                             "lark.in.*.engine.>", handle_batch, &in);
  *out = rc ? NULL : in;
  return rc;
}

void
engine_ingress_get_stats(engine_ingress *in, engine_ingress_stats *st) {
  pthread_mutex_lock(&in->s.q.mu);
  *st = in->st;
  pthread_mutex_unlock(&in->s.q.mu);
}

void
engine_ingress_stop(engine_ingress *in) {
  if (!in)
    return;
  svc_queue_destroy(&in->s.q); /* the worker has stopped */
  for (int i = 0; i < GROUPS_MAX; i++)
    free(in->g[i].pods);
  free(in->again);
  free(in);
}
