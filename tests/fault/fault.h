/*
 * fault.h - the fault harness: a real platform (`larkctl up`) under load
 * while brokers, services and edges are killed and paused and a hostile
 * user client probes what it can reach; then the end state is checked.
 *
 * Every random choice comes from one seed: each thread draws from its own
 * generator seeded from it (fh_rng_init(seed, stream)), so a run's
 * choices can be replayed with --seed, even if timings differ.
 */
#ifndef LARK_FAULT_H
#define LARK_FAULT_H

#include <stdatomic.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bus.h"

enum { FH_MAX_JOBS = 256, FH_MAX_PIDS = 32 };

typedef struct fh_rng {
  uint64_t s;
} fh_rng;

void fh_rng_init(fh_rng *r, uint64_t seed, uint64_t stream);
uint64_t fh_rand(fh_rng *r);
/* Uniform in [lo, hi]. */
int fh_between(fh_rng *r, int lo, int hi);

/* What the harness counted; every counter is under mu. */
typedef struct fh_counts {
  int broker_kills, service_kills, edge_kills, pauses;
  int applies, apply_retries, apply_failures, reports, report_failures;
  /* the hostile user */
  int pulls, pulls_denied, pulls_answered, pulls_events;
  int inbox_deliveries, inbox_other, lark_msgs, controls, controls_ok;
  char first_leak[512];
} fh_counts;

typedef struct fh {
  uint64_t seed;
  int cluster, rounds, nodes, verbose;
  int duration_s;     /* load and faults, per round */
  int settle_s;       /* deadline for the end state */
  int broker_kills;   /* per round */
  int service_faults; /* per round: service/edge kills and pauses */
  char larkctl[PATH_MAX];
  char work[PATH_MAX - 64]; /* the harness's own directory */
  char data[PATH_MAX];      /* larkctl up's data directory */
  char ran[PATH_MAX];       /* where pods write "<pod> <attempt>" */
  pid_t up;
  atomic_int stop; /* load and faults end */
  pthread_mutex_t mu;
  fh_counts n;
  int njobs;
  char jobs[FH_MAX_JOBS][64];
  int64_t events_end; /* LARK_EVENTS' messages at the end */
} fh;

/* platform.c */
int fh_up_start(fh *h);
void fh_up_stop(fh *h);
/* Run larkctl --data DATA args... (NULL-terminated), killed after
 * timeout_s; stdout into out. Returns its exit code (137: killed). */
int fh_larkctl(fh *h, int timeout_s, char *out, size_t cap, ...);
/* Children of `up` whose program name is prog (and, when arg is not
 * NULL, whose command line holds arg): their pids, at most cap. */
int fh_children(fh *h, const char *prog, const char *arg, pid_t *out, int cap);
/* A connection as principal name (creds <data>/creds/<name>.nk, URL
 * from <data>/url), with inbox prefix inbox (NULL: _INBOX, or with own
 * _INBOX_<its key>); NULL when none could be made. */
bus_conn *fh_connect(fh *h, const char *name, const char *inbox, int own);
/* Wait up to seconds for `larkctl status` to say every service is up. */
int fh_wait_up(fh *h, int seconds);
int64_t fh_now_ms(void);
void fh_sleep_ms(int ms);
void fh_log(fh *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* load.c: applies Jobs and emits run reports until h->stop. */
void *fh_load_main(void *arg);
/* faults.c: kills and pauses until h->stop; resumes what it paused. */
void *fh_faults_main(void *arg);
/* hostile.c: the user's probes until h->stop. */
void *fh_hostile_main(void *arg);

/* check.c: the end state; returns how many checks failed, each named
 * on stderr. */
int fh_check_end(fh *h);

#endif
