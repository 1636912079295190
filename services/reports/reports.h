/*
 * reports.h - lark-reports: users' run reports, from lark.rep.<user>.<job>
 * (LARK_REPORTS, a work queue) to lark.run.<job> (LARK_RUNS).
 *
 * The broker lets a user publish only under its own lark.rep.<user>., so
 * the subject's <user> token is the report's actor; whatever actor the
 * body names is ignored. The library holds the appender thread, so the
 * service, tests and benchmarks run the same code.
 */
#ifndef LARK_REPORTS_H
#define LARK_REPORTS_H

#include <stdint.h>

#include "bus.h"
#include "queue.h"

/* durable (the consumer on LARK_REPORTS, default "reports"), batch
 * (reports fetched at once, appended as one atomic batch; default and at
 * most BUS_ATOMIC_MAX), ack_wait_ns (redelivery after a crash, default
 * 10 s), and log: one line about a refused report or a retry (may be
 * NULL), with ud. */
typedef svc_queue_opts reports_opts;

void reports_opts_init(reports_opts *o);

typedef struct reports_stats {
  uint64_t appended;   /* reports stored in LARK_RUNS */
  uint64_t refused;    /* invalid reports, acknowledged and dropped */
  uint64_t retries;    /* appends tried again after a broker failure */
  uint64_t singles;    /* batches appended one report at a time: one that
                          held a report already stored (a redelivery), or
                          one the broker would not take whole */
  uint64_t duplicates; /* reports found already stored (counted in
                          appended too) */
  uint64_t last_seq;   /* LARK_REPORTS sequence of the last report settled */
} reports_stats;

typedef struct reports reports;

/* Start the appender thread on c (which it may share with nothing that
 * appends asynchronously: async failures are counted per connection). */
int reports_start(bus_conn *c, const reports_opts *o, reports **out);
void reports_get_stats(reports *r, reports_stats *st);
/* Stop and join; what is fetched but not yet stored stays unacknowledged
 * and comes back after ack_wait. NULL is fine. */
void reports_stop(reports *r);

/*
 * Split lark.rep.<user>.<job> into its names (each a bus_name_valid name
 * of at most BUS_NAME_MAX); BUS_ENAME otherwise.
 */
int reports_subject(const char *subject, char user[BUS_NAME_MAX + 1],
                    char job[BUS_NAME_MAX + 1]);

#endif
