/*
 * weights.c - a Job's weights on this node (weights.h): the cache's index
 * in memory, the pods' waits and the drop policy.
 *
 * The cache is <data>/weights/<sha256>, read only, one file per content
 * however many (job, version) rows name it; its index is the store's
 * "weights" table, copied into `held` at start and changed only here, on
 * the loop, each change written with its weights.report in one
 * transaction. A wait is answered from `held` at once, or parked until a
 * publish or a fetch adds a version it takes, or its timer fires.
 *
 * Policy: at most --weights-keep versions per Job and --weights-max-bytes
 * of files in all, the oldest going first; a Job's newest is never
 * dropped, and a fetch's part file is not in the index at all. A Job's
 * versions go when the node hosts none of its pods and the engine's
 * projections of it are gone, for a minute (weights_run.c).
 *
 * Nothing here starts a fetch: the entry points that may need one (a
 * pod's wait, a new projection) are the fetcher's (weights_get.c), which
 * calls down into this file, never the other way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "sender.h"
#include "weights_int.h"

static int
cmp_wver(const edge_wver *x, const char *job, uint64_t version) {
  int c = strcmp(x->job, job);
  if (c)
    return c;
  return x->version < version ? -1 : x->version > version;
}

const edge_wver *
wt_newest(edge_weights *ws, const char *job, uint64_t min) {
  const edge_wver *best = NULL;
  for (size_t i = 0; i < ws->nheld; i++)
    if (!strcmp(ws->held[i].job, job) && ws->held[i].version >= min)
      best = &ws->held[i]; /* sorted: the last one is the newest */
  return best;
}

int
wt_report(edge_weights *ws, const edge_wver *w, const char *event,
          const char *pod, const char *from, uint64_t ms, msgpack_sbuffer *sb,
          char *subject, size_t cap) {
  bus_ev_weights_report r = {.job = bus_str_of(w->job),
                             .event = bus_str_of(event),
                             .version = w->version,
                             .has_size = 1,
                             .size = w->size,
                             .sha256 = bus_str_of(w->sha256),
                             .has_pod = pod != NULL,
                             .pod = bus_str_of(pod),
                             .has_address = ws->address[0] != 0,
                             .address = bus_str_of(ws->address),
                             .has_from = from != NULL,
                             .from = bus_str_of(from),
                             .has_ms = from != NULL,
                             .ms = ms};
  int rc = bus_subj_weights_report(subject, cap, ws->a->cfg.node, w->job);
  return rc ? rc : bus_weights_report_pack(sb, &r);
}

/* ------------------------------------------------------------- waits */

static void
wait_closed(uv_handle_t *h) {
  free(h->data);
}

static void
wait_free(edge_weights_wait *w) {
  edge_weights_wait **pp = &w->ws->waits;
  while (*pp && *pp != w)
    pp = &(*pp)->next;
  if (*pp)
    *pp = w->next;
  if (w->has_timer)
    uv_close((uv_handle_t *)&w->timer, wait_closed);
  else
    free(w);
}

static void
wait_end(edge_weights_wait *w, int rc, const char *why, const edge_wver *v) {
  char path[WT_PATH_SZ] = "";
  edge_weights_cb cb = w->cb;
  void *ud = w->ud;
  if (v)
    wt_path(w->ws, v->sha256, path, sizeof path);
  wait_free(w);
  if (v)
    cb(ud, 0, NULL, v->version, path, v->sha256, v->size);
  else
    cb(ud, rc, why, 0, NULL, NULL, 0);
}

static void
on_wait_timeout(uv_timer_t *t) {
  wait_end(t->data, BUS_ETIMEOUT, "timeout", NULL);
}

/* Answer every wait of job that what is held now satisfies. */
static void
answer_waits(edge_weights *ws, const char *job) {
  edge_weights_wait *w = ws->waits, *next;
  for (; w; w = next) {
    next = w->next;
    const edge_wver *v =
        strcmp(w->job, job) ? NULL : wt_newest(ws, job, w->min);
    if (v) {
      wait_end(w, 0, NULL, v);
      next = ws->waits; /* the callback may have changed the list */
    }
  }
}

edge_weights_wait *
wt_wait(edge_agent *a, edge_proc *p, uint64_t min, uint64_t timeout_ms,
        edge_weights_cb cb, void *ud) {
  edge_weights *ws = a->weights;
  const edge_wver *v = ws ? wt_newest(ws, p->job, min) : NULL;
  char path[WT_PATH_SZ];
  if (!ws || v) {
    if (v)
      wt_path(ws, v->sha256, path, sizeof path);
    cb(ud, v ? 0 : BUS_EINVAL, v ? NULL : "the node keeps no weights",
       v ? v->version : 0, v ? path : NULL, v ? v->sha256 : NULL,
       v ? v->size : 0);
    return NULL;
  }
  edge_weights_wait *w = calloc(1, sizeof *w);
  if (!w) {
    cb(ud, -ENOMEM, "out of memory", 0, NULL, NULL, 0);
    return NULL;
  }
  *w = (edge_weights_wait){.ws = ws, .min = min, .cb = cb, .ud = ud};
  snprintf(w->job, sizeof w->job, "%s", p->job);
  if (timeout_ms) {
    uv_timer_init(a->loop, &w->timer);
    w->timer.data = w;
    w->has_timer = 1;
    uv_timer_start(&w->timer, on_wait_timeout, timeout_ms, 0);
  }
  w->next = ws->waits;
  ws->waits = w;
  return w;
}

void
edge_weights_wait_cancel(edge_weights_wait *w) {
  if (w)
    wait_free(w);
}

/* ------------------------------------------------------------- index */

static size_t
find(edge_weights *ws, const char *job, uint64_t version, int *hit) {
  size_t lo = 0, hi = ws->nheld;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = cmp_wver(&ws->held[mid], job, version);
    if (!c) {
      *hit = 1;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *hit = 0;
  return lo;
}

static int
held_insert(edge_weights *ws, const edge_wver *w) {
  int hit, rc;
  size_t i = find(ws, w->job, w->version, &hit);
  if (hit) {
    ws->held[i] = *w;
    return 0;
  }
  if ((rc = bus_grow(&ws->held, ws->nheld, &ws->cap, sizeof *ws->held, 16)))
    return rc;
  memmove(&ws->held[i + 1], &ws->held[i], (ws->nheld - i) * sizeof *ws->held);
  ws->held[i] = *w;
  ws->nheld++;
  return 0;
}

static int
sha_held(edge_weights *ws, const char *sha256) {
  for (size_t i = 0; i < ws->nheld; i++)
    if (!strcmp(ws->held[i].sha256, sha256))
      return 1;
  return 0;
}

/* Drop held[i]: its row with a weights.report {dropped}, then its file
 * when no other row names it. */
int
wt_drop_at(edge_weights *ws, size_t i, const char *why) {
  char subject[BUS_SUBJECT_MAX], path[WT_PATH_SZ];
  edge_wver w = ws->held[i];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc =
      wt_report(ws, &w, "dropped", NULL, NULL, 0, &sb, subject, sizeof subject);
  edge_msg m = {subject, "weights.report", sb.data, sb.size};
  if (!rc)
    rc = edge_store_weights_del(ws->a->store, w.job, w.version, &m);
  msgpack_sbuffer_destroy(&sb);
  if (rc) {
    edge_logf("error", w.job, "cannot drop weights %llu: %s",
              (unsigned long long)w.version, bus_last_error());
    return rc;
  }
  memmove(&ws->held[i], &ws->held[i + 1],
          (ws->nheld - i - 1) * sizeof *ws->held);
  ws->nheld--;
  if (!sha_held(ws, w.sha256)) {
    wt_path(ws, w.sha256, path, sizeof path);
    unlink(path);
  }
  edge_logf("info", w.job, "weights %llu dropped (%s)",
            (unsigned long long)w.version, why);
  edge_sender_wake(ws->a);
  return 0;
}

static uint64_t
cache_bytes(edge_weights *ws) {
  uint64_t n = 0;
  for (size_t i = 0; i < ws->nheld; i++) {
    size_t j = 0;
    while (j < i && strcmp(ws->held[j].sha256, ws->held[i].sha256))
      j++;
    if (j == i) /* one file per content */
      n += ws->held[i].size;
  }
  return n;
}

static int
newest_of_job(edge_weights *ws, size_t i) {
  return i + 1 == ws->nheld || strcmp(ws->held[i + 1].job, ws->held[i].job);
}

/* The first row past the newest keep of its Job (sorted: a Job's rows are
 * together, oldest first), or nheld. */
static size_t
over_keep(edge_weights *ws) {
  size_t keep = ws->a->cfg.weights_keep > 0 ? ws->a->cfg.weights_keep : 1;
  for (size_t i = 0; i < ws->nheld; i++) {
    size_t n = 1;
    while (i + n < ws->nheld && !strcmp(ws->held[i + n].job, ws->held[i].job))
      n++;
    if (n > keep)
      return i;
    i += n - 1;
  }
  return ws->nheld;
}

/* The oldest row (by when it came) that is not its Job's newest, or
 * nheld. */
static size_t
oldest_droppable(edge_weights *ws) {
  size_t best = ws->nheld;
  for (size_t i = 0; i < ws->nheld; i++)
    if (!newest_of_job(ws, i) &&
        (best == ws->nheld || ws->held[i].ts < ws->held[best].ts))
      best = i;
  return best;
}

static void
policy(edge_weights *ws) {
  size_t i;
  while ((i = over_keep(ws)) < ws->nheld)
    if (wt_drop_at(ws, i, "more than --weights-keep versions"))
      return;
  while (cache_bytes(ws) > ws->a->cfg.weights_max &&
         (i = oldest_droppable(ws)) < ws->nheld)
    if (wt_drop_at(ws, i, "the cache is over --weights-max-bytes"))
      return;
}

void
wt_drop_job(edge_weights *ws, const char *job) {
  for (size_t i = ws->nheld; i-- > 0;)
    if (!strcmp(ws->held[i].job, job) &&
        wt_drop_at(ws, i, "no pod of the Job remains on the node"))
      return;
}

int
wt_add(edge_weights *ws, const edge_wver *w, const edge_msg *msg) {
  int rc = edge_store_weights_put(ws->a->store, w, msg);
  if (!rc && (rc = held_insert(ws, w)))
    rc = bus_error(rc, "out of memory");
  if (rc)
    return rc;
  edge_sender_wake(ws->a);
  policy(ws);
  answer_waits(ws, w->job);
  return 0;
}
