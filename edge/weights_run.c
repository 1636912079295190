/*
 * weights_run.c - the weights part's start and stop (weights.h): the
 * cache directory made and cleaned of what a stopped agent left half
 * written, the index read back from the store (a row whose file is gone
 * or of another size is dropped, with its report), the server and the
 * fetchers' TLS context, and the sweep timer that forgets the Jobs that
 * left the node and retries fetches. After edge_weights_stop no callback
 * reaches a pod's socket; the state is freed once the last publish on a
 * worker and the last handle are done.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "weights_int.h"

/* A Job gone from the node (no pod, no projection) keeps its versions
 * this long: the projections of a Job placed a moment ago may not have
 * come yet when its first pod has already published and ended. */
enum { SWEEP_MS = 1000, GONE_GRACE_MS = 60000 };

struct wt_gone {
  char job[EDGE_NAME_SZ];
  int64_t since; /* mono ms */
};

static void
clean_dir(edge_weights *ws) {
  char path[WT_PATH_SZ + 300];
  DIR *d = opendir(ws->dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] == '.' && e->d_name[1] == 'p') { /* .pub.*, .part.* */
      snprintf(path, sizeof path, "%s/%s", ws->dir, e->d_name);
      unlink(path);
    }
  if (d)
    closedir(d);
}

static void
load_one(const edge_wver *w, void *ud) {
  edge_weights *ws = ud;
  if (bus_grow(&ws->held, ws->nheld, &ws->cap, sizeof *ws->held, 16) == 0)
    ws->held[ws->nheld++] = *w; /* the store's order: job, then version */
}

/* The index from the store; rows whose file is not whole go. */
static int
load(edge_weights *ws) {
  char path[WT_PATH_SZ];
  struct stat st;
  int rc = edge_store_weights_each(ws->a->store, load_one, ws);
  for (size_t i = ws->nheld; !rc && i-- > 0;) {
    wt_path(ws, ws->held[i].sha256, path, sizeof path);
    if (stat(path, &st) < 0 || (uint64_t)st.st_size != ws->held[i].size)
      wt_drop_at(ws, i, "its file is gone from the cache");
  }
  return rc;
}

static void
handle_closed(uv_handle_t *h) {
  edge_weights *ws = h->data;
  ws->handles--;
  wt_free_if_done(ws);
}

void
wt_free_if_done(edge_weights *ws) {
  if (!ws->closing || ws->pending || ws->handles)
    return;
  free(ws->held);
  free(ws->gone);
  free(ws);
}

/* Whether job has been gone for the grace period (and no longer when it
 * is back). */
static int
gone_long(edge_weights *ws, const char *job) {
  size_t i = 0;
  int gone = wt_job_gone(ws, job);
  while (i < ws->ngone && strcmp(ws->gone[i].job, job))
    i++;
  if (!gone ||
      (i < ws->ngone && bus_mono_ms() - ws->gone[i].since >= GONE_GRACE_MS)) {
    if (i < ws->ngone) /* back, or its versions go now */
      ws->gone[i] = ws->gone[--ws->ngone];
    return gone;
  }
  if (i == ws->ngone &&
      !bus_grow(&ws->gone, ws->ngone, &ws->gcap, sizeof *ws->gone, 4)) {
    snprintf(ws->gone[i].job, sizeof ws->gone[i].job, "%s", job);
    ws->gone[ws->ngone++].since = bus_mono_ms();
  }
  return 0;
}

static void
on_sweep(uv_timer_t *t) {
  edge_weights *ws = t->data;
  char job[EDGE_NAME_SZ];
  for (size_t i = 0; i < ws->nheld;) {
    snprintf(job, sizeof job, "%s", ws->held[i].job);
    while (i < ws->nheld && !strcmp(ws->held[i].job, job))
      i++;
    if (gone_long(ws, job)) {
      wt_drop_job(ws, job);
      i = 0; /* the array moved */
    }
  }
  wt_fetch_prune(ws);
  for (edge_weights_wait *w = ws->waits; w; w = w->next)
    wt_fetch_kick(ws, w->job);
}

static void
on_fetched(uv_async_t *h) {
  wt_fetch_reap(h->data);
}

static int
start_handles(edge_weights *ws) {
  uv_loop_t *loop = ws->a->loop;
  if (uv_async_init(loop, &ws->fetched, on_fetched))
    return bus_error(BUS_EINVAL, "cannot make the fetch wake-up");
  ws->fetched.data = ws;
  ws->has_async = 1, ws->handles++;
  uv_timer_init(loop, &ws->sweep);
  ws->sweep.data = ws;
  ws->has_sweep = 1, ws->handles++;
  uv_timer_start(&ws->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
  return 0;
}

int
edge_weights_start(edge_agent *a) {
  edge_weights *ws = calloc(1, sizeof *ws);
  int rc;
  if (!ws)
    return bus_error(-ENOMEM, "out of memory");
  ws->a = a;
  a->weights = ws;
  if (snprintf(ws->dir, sizeof ws->dir, "%s/weights", a->cfg.data) >
      (int)sizeof ws->dir - 80)
    return bus_error(BUS_EINVAL, "--data is too long for the weights cache");
  if (mkdir(ws->dir, 0700) < 0 && errno != EEXIST)
    return bus_error(-errno, "mkdir %s: %s", ws->dir, strerror(errno));
  clean_dir(ws);
  if ((rc = start_handles(ws)) || (rc = wt_net_start(ws)) || (rc = load(ws)))
    return rc;
  edge_logf("info", "-", "weights: cache %s, %zu versions held%s%s", ws->dir,
            ws->nheld, ws->address[0] ? ", serving on " : "", ws->address);
  return 0;
}

void
edge_weights_stop(edge_agent *a) {
  edge_weights *ws = a->weights;
  if (!ws)
    return;
  a->weights = NULL;
  ws->closing = 1;
  wt_net_stop(ws);
  while (ws->waits) /* the pods' sockets are closing: no answers */
    edge_weights_wait_cancel(ws->waits);
  if (ws->has_async)
    uv_close((uv_handle_t *)&ws->fetched, handle_closed);
  if (ws->has_sweep)
    uv_close((uv_handle_t *)&ws->sweep, handle_closed);
  wt_free_if_done(ws);
}
