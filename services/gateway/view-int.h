/*
 * view-int.h - the gateway view's insides, shared by view.c (definition,
 * apply), view_embed.c (the embedded views), view_touch.c (what an event
 * touches), view_render.c (objects rendered and written) and the reads
 * (view_reads.c, view_watch.c, view_counts.c).
 *
 * Tables (all in the digest, so a replay must give the same bytes):
 *   objects  <plural>/<name>             rec: the object as it is now
 *   history  <plural>/<name>/be64(seq)   rec, or empty when deleted then
 *   changes  be64(seq)<plural>/<name>    rec whose JSON is a change
 *   idx      j/<job>/<plural>/<name>     "" (tasks and pods of a Job)
 *            n/<node>/pods/<name>        "" (pods on a node)
 *            w/<wf>/jobs/<name>          "" (Jobs of a Workflow)
 *   times    be64(ts)be64(seq)           "" one per event applied; ts made
 *                                        monotonic (max so far) so the
 *                                        last entry <= a time is the last
 *                                        event stored by then
 *   revoked  <serial>                    "" (cert.revoked)
 *   meta     "seq" be64, "maxts" be64, "revocations" be64
 *   counts   <t|p|h>...                  the metrics' counters
 *
 * A rec is be64(resourceVersion), the object's job, node and workflow
 * each NUL-terminated ("" when none; what the filters match), then JSON.
 */
#ifndef LARK_GATEWAY_VIEW_INT_H
#define LARK_GATEWAY_VIEW_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gateway.h"

#define GW_API "rlinf.io/v1alpha1"
#define GW_KEY_MAX 600
#define GW_NAME_SZ 256

/* A rec's parts (pointing into the value read). */
typedef struct gw_rec {
  uint64_t rv;
  const char *job, *node, *wf;
  const char *json;
  size_t len;
} gw_rec;

/* 0, or BUS_ECORRUPT for a value that is not a rec. */
int gw_rec_parse(const void *val, size_t vlen, gw_rec *r);
/* 1 when r passes o's job/node/workflow filters. */
int gw_rec_matches(const gw_rec *r, const gw_list_opts *o);
/* "<plural>/<name>" into key; its length, 0 when it does not fit. */
size_t gw_obj_key(char *key, size_t cap, gw_kind k, const char *name);

/* --- embedded views (view_embed.c) */
typedef struct gw_embed gw_embed;
enum { GW_EMB_SCHED, GW_EMB_DAG, GW_EMB_IPAM, GW_NEMB };
/* The embedded views of the gateway view t belongs to, opened (and
 * checked against its applied sequence) on first use. */
int gw_embed_of(bus_txn *t, gw_embed **out);
/* Give ev to each embedded view, in the batch's write transaction on it
 * (begun at the batch's first event); BUS_ECORRUPT when they may be past
 * it (the gateway's commit failed after theirs). */
int gw_embed_feed(gw_embed *e, const bus_event *ev);
/* The batch's transactions on the embedded views, as fed so far: the
 * renders read through them. Valid after a gw_embed_feed, until the
 * batch ends. */
void gw_embed_txns(gw_embed *e, bus_txn *out[GW_NEMB]);
/* Set def's commit and abort hooks: the embedded views' transactions
 * commit just before the gateway's, and are dropped when it aborts. */
void gw_embed_hooks(bus_view_def *def);
/* gw_view_prepare's work, with the gateway view's def (view.c). */
int gw_embed_prepare(const char *dir, const bus_view_def *def);

/* --- touched objects (view_touch.c) and rendering (view_render.c) */
typedef struct gw_touch {
  gw_kind kind;
  char name[GW_NAME_SZ];
} gw_touch;

typedef struct gw_touched {
  gw_touch *v;
  size_t n, cap;
} gw_touched;

int gw_touch_add(gw_touched *s, gw_kind k, const char *name);
void gw_touched_free(gw_touched *s);
/* What ev touches, read from the embedded views and the gateway's index. */
/* The Workflow that claimed job (dag's jobs table) into wf[cap], or NULL. */
const char *gw_job_workflow(bus_txn *dt, const char *job, char *wf, size_t cap);
int gw_touches(bus_txn *t, bus_txn *rt[GW_NEMB], const bus_event *ev,
               gw_touched *s);
/* Every touched object rendered again; the changed ones written. Pods
 * add their nodes (before and after) to s as they go. */
int gw_render_all(bus_txn *t, bus_txn *rt[GW_NEMB], const bus_event *ev,
                  gw_touched *s);

/* --- counts (view_counts.c): apply's part */
int gw_counts_apply(bus_txn *t, const bus_event *ev);

/* meta helpers */
uint64_t gw_meta_u64(bus_txn *t, const char *k);
int gw_meta_put_u64(bus_txn *t, const char *k, uint64_t v);

#endif
