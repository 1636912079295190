/*
 * fleet.h - simulated edge nodes for the fleet benchmarks: each node has
 * its own broker connection (inbox prefix _INBOX_<node>), reads its own
 * stream through the pinned slice consumer lark-edge uses (bus_slice), on
 * a thread of its own, and hands each desired state it fetched to a
 * callback with the time it got it. Latencies are kept in one array and
 * reported as p50/p99/max.
 */
#ifndef LARK_BENCH_FLEET_H
#define LARK_BENCH_FLEET_H

#include <stdint.h>

#include "bus.h"

/* Called on a node's thread for each event it fetched (ev may be NULL
 * when it did not decode). */
typedef void (*fleet_got_fn)(const bus_event *ev, int64_t now_ns, void *ud);

typedef struct fleet fleet;

/* "n<i>": node i's name. */
void fleet_node_name(int i, char *out, size_t cap);

/*
 * The stream every node reads (one stream for the fleet on lark.node.>),
 * or NULL (the default): each node reads its own LARK_NODE_<node>. Set
 * before fleet_start.
 */
void fleet_use_stream(const char *stream);

/*
 * Connect n nodes to url and start them, each reading its node stream
 * (or the stream fleet_use_stream named), which must exist. Returns when every
 * node has opened its consumer (or failed: *failed counts those). Exits on a
 * hard error.
 */
fleet *fleet_start(const char *url, int n, fleet_got_fn got, void *ud,
                   int *failed);
/* Stop the threads, close consumers and connections. */
void fleet_stop(fleet *f);

/* Sleep until item i of a run started at start is due at rate/s (0: no
 * pacing). */
void fleet_pace(int64_t start, long i, int rate);

/* Latencies: room for n, recorded from any thread, reported sorted. */
void fleet_lat_init(long n);
void fleet_lat_reset(void);
void fleet_lat_add(int64_t ns);
long fleet_lat_count(void);
void fleet_lat_report(const char *what);
void fleet_lat_free(void);

/* The floor, in the same run: total core-NATS publishes of 200 bytes from
 * w to a subscriber on sub, paced like the run, reported like it. */
void fleet_baseline(bus_conn *w, bus_conn *sub, long total, int rate);

#endif
