/*
 * fleetsim.h - the bed of the fleet-size benchmarks (bench_fleet_idle,
 * bench_fleet_storm): a broker with the platform's accounts in which each
 * simulated node is its own nkey user, a real lark-scheduler under its
 * own credentials, and the simulated nodes in several bench_uvfleet
 * processes (uvfleet.c), whose progress lines are summed here. The
 * broker's own costs are read from outside it: CPU time from
 * /proc/<pid>/stat, descriptors from /proc/<pid>/fd, bytes on its client
 * sockets (TCP payload both ways, every connection) from `ss -ti`.
 */
#ifndef LARK_BENCH_FLEETSIM_H
#define LARK_BENCH_FLEETSIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "natsd.h"

enum { FLEETSIM_PROCS_MAX = 32 };

/* What the node processes said last, summed. */
typedef struct fleetsim_counts {
  long conn, cons, pulls, hb, got, err;
} fleetsim_counts;

typedef struct fleetsim {
  const char *argv0;
  char dir[256];   /* broker store, logs, the scheduler's view */
  char creds[512]; /* <creds>/creds/<name>.nk and the registry */
  lt_natsd srv;
  pid_t sched;
  int nprocs;
  pid_t pids[FLEETSIM_PROCS_MAX];
  int fds[FLEETSIM_PROCS_MAX]; /* their stdout, non-blocking */
  char line[FLEETSIM_PROCS_MAX][256];
  fleetsim_counts each[FLEETSIM_PROCS_MAX];
} fleetsim;

/* One client socket of the broker: its peer's port, TCP payload bytes
 * received and sent so far. */
typedef struct fleetsim_sock {
  unsigned port;
  uint64_t in, out;
} fleetsim_sock;

/* The broker's costs at one moment. */
typedef struct fleetsim_broker {
  double cpu_s;         /* user + system CPU seconds so far */
  long fds;             /* open descriptors */
  long conns;           /* established client sockets */
  long rss_kb;          /* resident memory */
  fleetsim_sock *socks; /* conns of them, by port (fleetsim_broker_free) */
} fleetsim_broker;

/*
 * Credentials for admin, lark-scheduler and nodes n0..n<n-1> under creds
 * (made once and kept: a later run with as many nodes or fewer reuses
 * them), a broker with their accounts, and, when with_sched, lark-scheduler
 * started beside it (LARK_NODE_TIMEOUT_MS from timeout_ms when > 0). The
 * benchmark dies when any of it fails.
 */
/* Where the benchmarks keep the fleet's credentials unless told:
 * $TMPDIR (or /tmp)/larkbench-fleet-creds. */
void fleetsim_creds_dir(char *out, size_t cap);
void fleetsim_up(fleetsim *f, const char *argv0, const char *tag,
                 const char *creds, int n, int with_sched, int timeout_ms);
/* Node streams (and the platform's) in memory instead of files, for the
 * next fleetsim_up: what bounds a fleet with file-stored ones is the
 * broker making them (fleet_storm) and its descriptors. */
void fleetsim_memory_streams(int on);
/* Each node's stream made before the nodes start, as `larkctl node add`
 * makes it on a running broker, for the next fleetsim_up; otherwise the
 * scheduler makes it when the node registers (a broker restarted since
 * the node was added: node streams are kept in memory). */
void fleetsim_streams_at_add(int on);

/* The admin connection fleetsim_up opened (valid until fleetsim_down). */
bus_conn *fleetsim_admin(void);

/* Stop the nodes, the scheduler and the broker; remove the directory. */
void fleetsim_down(fleetsim *f);

/* Start n nodes (n0..) in procs bench_uvfleet processes with the flags
 * given (NULL-terminated, e.g. "--mode", "core"). */
void fleetsim_nodes(fleetsim *f, int n, int procs, const char *const *flags);
/* Stop every node process (the broker sees their connections close). */
void fleetsim_nodes_stop(fleetsim *f);
/* Read what the node processes printed since; the sums into c. */
void fleetsim_poll(fleetsim *f, fleetsim_counts *c);

/* Which of the counts fleetsim_wait watches. */
enum { FLEETSIM_CONN, FLEETSIM_CONS, FLEETSIM_GOT };
/* Poll every poll_ms until the count `which` reaches want: 0, or -1
 * after limit_s; the counts last read into c, the seconds into *took. */
int fleetsim_wait(fleetsim *f, int which, long want, int limit_s, int poll_ms,
                  fleetsim_counts *c, double *took);

void fleetsim_broker_read(const fleetsim *f, fleetsim_broker *b);
void fleetsim_broker_free(fleetsim_broker *b);
/* Bytes received and sent between a and b on the sockets open at both
 * (a connection that came or went meanwhile would count as a jump). */
void fleetsim_bytes(const fleetsim_broker *a, const fleetsim_broker *b,
                    uint64_t *in, uint64_t *out);

/* How many of the scheduler's Nodes are registered (Ready), counted from
 * node.registered events in LARK_EVENTS. */
long fleetsim_ready(fleetsim *f);

#endif
