/*
 * gateway.h - lark-gateway: the platform over HTTP.
 *
 * The gateway is a service like the others: it follows LARK_EVENTS into
 * a view of its own and answers from it, never from another service's
 * replies (a NATS reply holds 1 MiB; a list of 10,000 pods does not fit).
 *
 * Its view (view*.c, library larkgw) holds the REST objects themselves,
 * rendered as JSON once, when an event changes them:
 *
 *   - the gateway embeds copies of the views whose objects it serves
 *     (scheduler: nodes, jobs, tasks, pods; dag: workflows; ipam:
 *     domains and pods' virtual IPs), each in a subdirectory of its own
 *     data directory, fed event by event from the gateway's own apply
 *     (decide off), so each object is rendered with the very query code
 *     its owning service answers with, at exactly the event that changed
 *     it;
 *   - for every event, the objects it touched are rendered again; an
 *     object whose JSON changed is written to `objects` (kind/name ->
 *     JSON), to its history (kind/name/seq -> JSON, empty when deleted)
 *     and to `changes` (seq/kind/name -> {type, object}), so a watch can
 *     start after any sequence and `?at=` answers from history without a
 *     rebuild.
 *
 * Because apply reads no clock and renders from views applied to the same
 * sequence, a replay of the gateway's view gives the same digest as the
 * live one (`larkctl replay gateway --verify`).
 *
 * Threads: the service loop applies; any number of HTTP threads read
 * (each call opens its own read transaction) and wait for changes
 * (bus_view_wait_applied underneath). Every function here may be called
 * from any thread unless it says otherwise.
 *
 * JSON forms (the REST API; docs/gateway.md):
 *
 *   object  {"apiVersion":"rlinf.io/v1alpha1","kind":"Pod",
 *            "metadata":{"name":"p","resourceVersion":"42"}, <fields>}
 *           <fields> are those `larkctl get KIND NAME -o json` prints
 *           (the owner's describe), "spec" added for Jobs and Workflows
 *           (the submitted spec, as JSON);
 *           resourceVersion: the stream sequence of the event that last
 *           changed the object's JSON.
 *   list    {"apiVersion":"rlinf.io/v1alpha1","kind":"PodList",
 *            "metadata":{"resourceVersion":"SEQ","continue":"TOKEN"},
 *            "items":[object, ...]}   (continue absent on the last page)
 *   change  {"type":"ADDED"|"MODIFIED"|"DELETED","object":object}
 *           (a DELETED object is the last JSON it had, its
 *           resourceVersion the deleting event's sequence)
 */
#ifndef LARK_GATEWAY_H
#define LARK_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* ------------------------------------------------------------ buffers */

/* A growable byte buffer; p is NUL-terminated after every append. */
typedef struct gw_buf {
  char *p;
  size_t len, cap;
} gw_buf;

/* 0, or -ENOMEM (the buffer is then left as it was). */
int gw_buf_add(gw_buf *b, const void *data, size_t len);
int gw_buf_printf(gw_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* data as a JSON string, quotes included. */
int gw_buf_json_str(gw_buf *b, const char *s);
void gw_buf_reset(gw_buf *b); /* len 0, memory kept */
void gw_buf_free(gw_buf *b);

/* --------------------------------------------------------------- view */

/* The kinds served, as the URL names them. */
typedef enum gw_kind {
  GW_NODES,
  GW_WORKFLOWS,
  GW_JOBS,
  GW_TASKS,
  GW_PODS,
  GW_DOMAINS,
  GW_NKINDS
} gw_kind;

/* "pods" -> GW_PODS; -1 for a name that is not a kind served. */
int gw_kind_parse(const char *plural);
const char *gw_kind_plural(gw_kind k); /* "pods" */
const char *gw_kind_name(gw_kind k);   /* "Pod" */

/*
 * The gateway's view definition (name "gateway", LARK_EVENTS, lark.ev.>)
 * for svc_main and replay. Its apply opens the embedded views lazily in
 * <the gateway view's directory>/embedded/<name> the first time it runs
 * in a directory; an embedded view whose applied sequence differs from
 * the gateway's at that moment is thrown away and the whole view rebuilt
 * (the gateway view reports BUS_ECORRUPT once so the loop starts over
 * from sequence 1): after an OS crash they can disagree.
 */
void gw_view_def(bus_view_def *def);

/*
 * Run before opening the gateway view in dir (lark-gateway's main): when
 * the view there and its embedded views disagree (an OS crash lost what
 * one of them committed), remove their stores (dir/data.mdb, lock.mdb
 * and embedded/; other files of dir are left) so the service rebuilds
 * the view from sequence 1. 0 when nothing was wrong or they were removed.
 */
int gw_view_prepare(const char *dir);

/* The reads below take the open gateway view (the bus_view svc_main or
 * replay opened with gw_view_def). */

typedef struct gw_list_opts {
  size_t limit;         /* 0: all */
  const char *cont;     /* the previous page's continue token, or NULL */
  int64_t at_ns;        /* 0: now; else as the platform was then */
  const char *job;      /* tasks and pods of this Job only, or NULL */
  const char *node;     /* pods on this node only, or NULL */
  const char *workflow; /* jobs of this Workflow only, or NULL */
} gw_list_opts;

void gw_list_opts_init(gw_list_opts *o);

/*
 * Append the list JSON of kind to out. *rv (may be NULL) is set to the
 * list's resourceVersion (the gateway view's applied sequence, or the
 * last sequence at or before at_ns). BUS_EINVAL for a bad continue token.
 */
int gw_list(bus_view *v, gw_kind kind, const gw_list_opts *o, gw_buf *out,
            uint64_t *rv);

/* Append one object's JSON; BUS_ENOT_FOUND when there is none (then). */
int gw_get(bus_view *v, gw_kind kind, const char *name, int64_t at_ns,
           gw_buf *out);

/*
 * The sequence of the last event stored at or before at_ns (0 when the
 * log starts after it). For "?at=" answers' resourceVersion.
 */
uint64_t gw_seq_at(bus_view *v, int64_t at_ns);

/*
 * A watch. Calls each(ud, seq, type, json, len), json the change form
 * above ({"type","object"}), for every change of kind (filtered as o's
 * job/node/workflow; o's limit, cont and at_ns are ignored) after
 * *after, in sequence order, and sets *after to the last sequence looked
 * at. When none is there, waits up to timeout_ms for the view to apply
 * more. Returns the number of changes given, 0 on a timeout, or an error
 * (each returning non-zero stops the call and that value is returned).
 * *after 0: first every current object as ADDED, then the changes (as a
 * Kubernetes watch without resourceVersion).
 */
typedef int (*gw_change_fn)(void *ud, uint64_t seq, const char *type,
                            const char *json, size_t len);
int gw_watch_next(bus_view *v, gw_kind kind, const gw_list_opts *o,
                  uint64_t *after, gw_change_fn each, void *ud, int timeout_ms);

/*
 * Certificates: 1 when the serial (hex, as cert.issued names it) was
 * revoked by the events applied so far, else 0. And a counter that moves
 * every time a revocation is applied, so open streams can check cheaply.
 */
int gw_cert_revoked(bus_view *v, const char *serial);
uint64_t gw_revocations(bus_view *v);

/* ------------------------------------------------------------- counts */

/* Histogram bucket bounds in seconds (Prometheus "le"), +Inf implied. */
#define GW_HIST_BOUNDS                                                         \
  { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 }
enum { GW_HIST_N = 13 };

typedef struct gw_hist {
  uint64_t bucket[GW_HIST_N + 1]; /* not cumulative; last: above 60 s */
  uint64_t count;
  double sum; /* seconds */
} gw_hist;

/* A name and its count (events by type, pods by phase). */
typedef struct gw_count {
  char name[64];
  uint64_t n;
} gw_count;

/*
 * What /metrics shows from the view, all derived from events (times are
 * the events' ts, so replay gives the same): events applied by type, pods
 * by phase, nodes Ready and NotReady, scheduling latency (job.submitted
 * to the job.placed that bound it) and pod start (the binding to the
 * pod's first Running of that attempt).
 */
typedef struct gw_counts {
  gw_count *types;
  size_t ntypes;
  gw_count *phases;
  size_t nphases;
  uint64_t nodes_ready, nodes_notready;
  gw_hist sched_latency, pod_start;
  uint64_t applied_seq;
} gw_counts;

int gw_counts_get(bus_view *v, gw_counts *out);
void gw_counts_free(gw_counts *c);

/* ------------------------------------------------------ feeds (streams) */

/*
 * One record of a feed, handed to the HTTP layer, which frames it (a JSON
 * line, or a Server-Sent Event with id and event): id is the stream
 * sequence, event a short name ("event", "log"), json one JSON object.
 */
typedef int (*gw_rec_fn)(void *ud, uint64_t id, const char *event,
                         const char *json, size_t len);

/*
 * The audit tail: events of LARK_EVENTS and LARK_RUNS, each as
 * `larkctl tail -o json` prints it, filtered by subject (a NATS
 * wildcard filter; NULL: both streams whole), type (a glob as larkctl
 * tail --type takes), actor (exact), since (stored time; 0: from the
 * start, or after_seq when set), after_seq (resume: the last id seen;
 * only with a subject of one stream). With follow, waits for more.
 */
typedef struct gw_events_query {
  const char *subject;
  const char *type;
  const char *actor;
  int64_t since_ns;
  uint64_t after_seq;
  size_t limit; /* 0: no limit */
  int follow;
} gw_events_query;

typedef struct gw_feed gw_feed;

int gw_events_open(bus_conn *c, const gw_events_query *q, gw_feed **out);

/*
 * A Job's logs (LARK_LOGS, lark.log.<job>.>, or one pod's): the last
 * `tail` lines (0: all) then, with follow, every new batch. Each record
 * is {"pod":..,"task":..,"stream":"stdout"|"stderr","ts":..,"line":..}.
 */
typedef struct gw_logs_query {
  const char *job;
  const char *pod; /* NULL: every pod of the Job */
  size_t tail;
  int follow;
  const char *user; /* asks lark-logs for the lines on their way first
                       (logs.sync, as this user), as larkctl logs does;
                       NULL: what is stored */
} gw_logs_query;

int gw_logs_open(bus_conn *c, const gw_logs_query *q, gw_feed **out);

/*
 * Give each record available within timeout_ms to each. Returns the count
 * given (0: nothing yet, send a keep-alive), GW_FEED_END when a feed that
 * does not follow has given everything, or an error (each returning
 * non-zero stops the call and that value is returned).
 */
enum { GW_FEED_END = -100000 };
int gw_feed_next(gw_feed *f, gw_rec_fn each, void *ud, int timeout_ms);
void gw_feed_close(gw_feed *f); /* NULL accepted */

/* ------------------------------------------------------------ metrics */

/*
 * The Prometheus text exposition (version 0.0.4) of the platform, every
 * name prefixed lark_: per service applied sequence, lag, refused
 * (stale + rejected) and state (lark.sys.status of each, asked with
 * timeout_ms); the view's counts (gw_counts); stream sizes (messages and
 * bytes per stream); relay sessions. Appended to out.
 */
int gw_metrics_render(bus_conn *c, bus_view *v, int timeout_ms, gw_buf *out);

#endif
