/*
 * commands-int.h - what the scheduler's command files share (commands.c,
 * commands_apply.c): a command's state in the view, its reply, its
 * resource, and the lock that keeps writes of Jobs one at a time.
 */
#ifndef LARK_SCHED_COMMANDS_INT_H
#define LARK_SCHED_COMMANDS_INT_H

#include <pthread.h>

#include "scheduler.h"

#define MAX_ERRS 32

/* The version of the subject of name (kind job or node) into *prev and,
 * rec set, its record (a job_rec or node_rec); NOT_FOUND naming it when
 * there is none. */
int sched_cmd_state_in(bus_txn *t, const char *kind, const char *name,
                       void *rec, uint64_t *prev);
/* Reply to an append: ok with {result: what} and seq, CONFLICT as "try
 * again", another error as it is. Returns rc. */
int sched_cmd_reply(bus_conn *c, const bus_cmd *cmd, int rc, uint64_t seq,
                    const char *what);
/* The body's resource, checked against kind's schema and unpacked into
 * out (type's data, from z); its name into name. On error it is replied,
 * missing the message when there is no resource, else invalid. */
int sched_cmd_resource(bus_conn *c, const bus_cmd *cmd, const char *kind,
                       bus_type type, const char *missing, msgpack_zone *z,
                       void *out, char name[SCHED_NAME_SZ]);
/* job.apply (commands_apply.c). */
int sched_job_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud);
/* Held while Jobs are checked and written: a group of job.apply, or a
 * stop, resume or delete. */
extern pthread_mutex_t sched_job_writes;

#endif
