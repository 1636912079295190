/*
 * harness.c - the fault harness's entry: bring the platform up, then for
 * each round run the load, the faults and the hostile user together for
 * a while, stop them, and check the end state (check.c). Exits 0 when
 * every round's checks held, 1 naming each failure, 2 on bad usage.
 *
 *   lark-fault [--seed S] [--rounds N] [--cluster] [--duration SECONDS]
 *              [--broker-kills K] [--faults F] [--settle SECONDS]
 *              [--work DIR] [--keep] [-v]
 *
 * The seed is printed first; the same seed draws the same faults, Jobs
 * and pauses in the same order. The work directory (a new one under
 * $TMPDIR unless --work) holds the platform's data, the Jobs' manifests,
 * the pods' ran file and up.log; it is removed after a passing run unless
 * --keep, and kept after a failing one.
 */
#include "fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

#define USAGE                                                                  \
  "lark-fault [--seed S] [--rounds N] [--cluster] [--duration SECONDS] "       \
  "[--broker-kills K] [--faults F] [--settle SECONDS] [--work DIR] [--keep] "  \
  "[-v]"

void
fh_rng_init(fh_rng *r, uint64_t seed, uint64_t stream) {
  r->s = seed ^ (stream * 0x9e3779b97f4a7c15ULL);
}

/* splitmix64: small, and the same on every machine */
uint64_t
fh_rand(fh_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int
fh_between(fh_rng *r, int lo, int hi) {
  if (hi <= lo)
    return lo;
  return lo + (int)(fh_rand(r) % (uint64_t)(hi - lo + 1));
}

static int
parse_args(int argc, char **argv, fh *h, const char **work, int *keep) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (!strcmp(a, "--cluster"))
      h->cluster = 1;
    else if (!strcmp(a, "--keep"))
      *keep = 1;
    else if (!strcmp(a, "-v"))
      h->verbose = 1;
    else if (!strcmp(a, "--seed") && has)
      h->seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--rounds") && has)
      h->rounds = atoi(argv[++i]);
    else if (!strcmp(a, "--duration") && has)
      h->duration_s = atoi(argv[++i]);
    else if (!strcmp(a, "--broker-kills") && has)
      h->broker_kills = atoi(argv[++i]);
    else if (!strcmp(a, "--faults") && has)
      h->service_faults = atoi(argv[++i]);
    else if (!strcmp(a, "--settle") && has)
      h->settle_s = atoi(argv[++i]);
    else if (!strcmp(a, "--work") && has)
      *work = argv[++i];
    else
      return -1;
  }
  return h->rounds > 0 && h->duration_s > 0 && h->settle_s > 0 ? 0 : -1;
}

/* The work directory and what lives in it. */
static int
make_work(fh *h, const char *work) {
  char jobs[PATH_MAX];
  if (work)
    snprintf(h->work, sizeof h->work, "%s", work);
  else {
    const char *t = getenv("TMPDIR");
    snprintf(h->work, sizeof h->work, "%s/lark-fault-XXXXXX",
             t && *t ? t : "/tmp");
    if (!mkdtemp(h->work))
      return -1;
  }
  mkdir(h->work, 0700);
  snprintf(h->data, sizeof h->data, "%s/data", h->work);
  snprintf(h->ran, sizeof h->ran, "%s/ran", h->work);
  snprintf(jobs, sizeof jobs, "%s/jobs", h->work);
  mkdir(jobs, 0700);
  lt_bin("larkctl", h->larkctl, sizeof h->larkctl);
  if (access(h->larkctl, X_OK) < 0) {
    fprintf(stderr, "fault: %s is missing (set LARK_BIN_DIR)\n", h->larkctl);
    return -1;
  }
  return 0;
}

/* One round: load, faults and the hostile user, then the checks. */
static int
round_run(fh *h, int round) {
  pthread_t load, faults, hostile;
  fh_log(h, "round %d: %d s of load, %d broker kills, %d other faults", round,
         h->duration_s, h->broker_kills, h->service_faults);
  h->stop = 0;
  pthread_create(&load, NULL, fh_load_main, h);
  pthread_create(&faults, NULL, fh_faults_main, h);
  pthread_create(&hostile, NULL, fh_hostile_main, h);
  for (int64_t end = fh_now_ms() + (int64_t)h->duration_s * 1000;
       fh_now_ms() < end;)
    fh_sleep_ms(200);
  h->stop = 1;
  pthread_join(faults, NULL);
  pthread_join(load, NULL);
  pthread_join(hostile, NULL);
  fh_log(h, "round %d: load and faults stopped; checking", round);
  return fh_check_end(h);
}

static void
report(const fh *h, int failed) {
  const fh_counts *n = &h->n;
  printf("fault: seed %llu, %d round%s%s: %d broker kills, %d service kills, "
         "%d edge kills, %d pauses; %d Jobs applied (%d retries, %d failed), "
         "%d run reports (%d failed); %lld events in LARK_EVENTS\n",
         (unsigned long long)h->seed, h->rounds, h->rounds > 1 ? "s" : "",
         h->cluster ? " (cluster)" : "", n->broker_kills, n->service_kills,
         n->edge_kills, n->pauses, n->applies, n->apply_retries,
         n->apply_failures, n->reports, n->report_failures,
         (long long)h->events_end);
  printf("fault: hostile user: %d of %d status controls answered; %d pulls "
         "(%d refused or unanswered, %d answered, %d with an event); "
         "overheard %d deliveries and %d other replies in other clients' "
         "inboxes; %d messages on lark.>\n",
         n->controls_ok, n->controls, n->pulls, n->pulls_denied,
         n->pulls_answered, n->pulls_events, n->inbox_deliveries,
         n->inbox_other, n->lark_msgs);
  printf("fault: %s (seed %llu; work %s)\n", failed ? "FAILED" : "passed",
         (unsigned long long)h->seed, h->work);
}

int
main(int argc, char **argv) {
  static fh h;
  const char *work = NULL;
  int keep = 0;
  h.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
  h.rounds = 1;
  h.nodes = 2;
  h.duration_s = 60;
  h.settle_s = 120;
  h.broker_kills = 3;
  h.service_faults = 6;
  pthread_mutex_init(&h.mu, NULL);
  if (parse_args(argc, argv, &h, &work, &keep) < 0) {
    fprintf(stderr, "usage: %s\n", USAGE);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  printf("fault: seed %llu (replay with --seed %llu)\n",
         (unsigned long long)h.seed, (unsigned long long)h.seed);
  if (make_work(&h, work) < 0)
    return 1;
  int failed = fh_up_start(&h) < 0;
  for (int r = 1; r <= h.rounds && !failed; r++)
    failed += round_run(&h, r);
  fh_up_stop(&h);
  report(&h, failed);
  if (!failed && !keep) {
    char out[256];
    lt_sh(out, sizeof out, NULL, 0, "rm -rf '%s'", h.work);
  }
  return failed ? 1 : 0;
}
