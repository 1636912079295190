/*
 * gang.h - the gang-burst figure shared by bench_edge_fleet_e2e (nodes as
 * threads in the bench) and bench_fleet_gang (nodes in bench_uvfleet
 * processes): Jobs "job<i>" submitted through the command path, each
 * desired state a node got kept with its Job, the node stream's stored
 * time and the time the node had it, reported from each pod's binding
 * (its Job's job.placed, the broker's stored time) in two legs; and each
 * copy pushed ahead of the stream, when the nodes listen for them.
 */
#ifndef LARK_BENCH_GANG_H
#define LARK_BENCH_GANG_H

#include <stdint.h>

#include "bus.h"

/* A desired state a node got: its Job's index, when the node stream
 * stored it and when the node had it (wall ns). */
typedef struct gang_seen {
  int job;
  int64_t stored, ns;
} gang_seen;

/* The index of Job "job<i>"; -1 for any other name. */
int gang_job_index(const char *name);

/* The Job index of a desired state's data; -1 when not one of ours. */
int gang_job_of(const msgpack_object *data);

/* Submit Jobs job0..job<jobs-1> of pods pods each, spread, paced at rate
 * pods/s (0: as fast as the commands go). */
void gang_submit(bus_conn *c, int jobs, int pods, int rate);

/* p50/p99/max from each pod's binding to its node: of the np pushed
 * copies (bus_node_push_subject; their stored is unused) when np > 0,
 * then of the n stored copies seen, whole and in their two legs (-> node
 * stream, node stream -> node), for jobs Jobs; the bindings read from
 * LARK_EVENTS on c. */
void gang_report(bus_conn *c, const gang_seen *seen, long n,
                 const gang_seen *pushed, long np, int jobs);

#endif
