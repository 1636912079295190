/*
 * jobs.h - the Job rule the relay hub applies to weights channels (part
 * of larkrelay), from the events lark-engine writes on
 * lark.ev.engine.<job>.
 *
 * Per Job the table keeps the latest engine.nodes (every node hosting a
 * pod of the Job, with its cluster) and, per node, the weights-server
 * addresses its weights.published and weights.cached events gave
 * (newest first, at most RELAY_JOB_ADDRS per node). A weights channel
 * from node F to node T at address A for Job J is allowed only when
 * both F and T are in J's latest engine.nodes, F's cluster is the
 * requesting relay's, and A is one of T's addresses for J. An
 * engine.ended of a deleted Job forgets it.
 *
 * The table locks itself: the follower thread applies, session threads
 * check.
 */
#ifndef LARK_RELAY_JOBS_H
#define LARK_RELAY_JOBS_H

#include <stddef.h>

#include "bus.h"
#include "wreq.h"

#define RELAY_JOB_ADDRS 4 /* addresses kept per node of a Job */

typedef struct relay_jobs relay_jobs;

int relay_jobs_new(relay_jobs **out);
void relay_jobs_free(relay_jobs *t);

/* One event of lark.ev.engine.<job>: 1 when it changed the table, 0 when
 * it is not one the rule reads, BUS_EMALFORMED when it does not decode. */
int relay_jobs_apply(relay_jobs *t, const bus_event *ev);

/*
 * The rule for r asked by a relay of cluster (its certificate's): 0 with
 * to-node's cluster in to_cluster, or BUS_EDENIED with why.
 */
int relay_jobs_check(relay_jobs *t, const relay_wreq *r, const char *cluster,
                     char to_cluster[RELAY_NAME_MAX], char *why, size_t cap);

/* Jobs known (for the log). */
size_t relay_jobs_count(relay_jobs *t);

#endif
