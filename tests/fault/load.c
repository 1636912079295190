/*
 * load.c - the steady load: a Job applied every few seconds (one task of
 * one pod, or two tasks of several replicas), and run reports emitted for
 * the Jobs already applied, all through `larkctl`.
 *
 * Each pod appends "<pod> <attempt>" to the harness's ran file, then
 * sleeps a little so that some pods are running when a fault lands. An
 * apply that fails (the broker was just killed) is tried again until it
 * succeeds: applying the same manifest again is `unchanged` once it has
 * landed, so a retry never makes a second Job. A Job counts as applied
 * only once an apply of it exited 0.
 */
#include "fault.h"

#include <stdio.h>
#include <string.h>

enum { APPLY_DEADLINE_S = 90 };

static void
write_task(FILE *f, const char *task, const char *role, int replicas,
           int sleep_ds, const char *ran) {
  fprintf(f,
          "    - name: %s\n"
          "      role: %s\n"
          "      replicas: %d\n"
          "      maxRetries: 3\n"
          "      runtime:\n"
          "        raw:\n"
          "          entrypoint: [\"/bin/sh\", \"-c\", "
          "\"echo \\\"$LARK_POD $LARK_ATTEMPT\\\" >> %s; sleep %d.%d\"]\n",
          task, role, replicas, ran, sleep_ds / 10, sleep_ds % 10);
}

/* The manifest of Job name into path; its shape drawn from r. */
static int
write_job(fh *h, fh_rng *r, const char *name, const char *path) {
  static const char *const strategies[] = {"spread", "pack"};
  FILE *f = fopen(path, "we");
  if (!f)
    return -1;
  fprintf(f,
          "apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: %s\n"
          "spec:\n  strategy: %s\n  tasks:\n",
          name, strategies[fh_between(r, 0, 1)]);
  if (fh_between(r, 0, 2) == 0) {
    write_task(f, "solo", "Actor", 1, fh_between(r, 0, 30), h->ran);
  } else {
    write_task(f, "learner", "Actor", 1, fh_between(r, 0, 30), h->ran);
    write_task(f, "sampler", "Rollout", fh_between(r, 2, 3),
               fh_between(r, 0, 30), h->ran);
  }
  return fclose(f);
}

/* Apply path until it succeeds or the deadline passes; 0 when applied. */
static int
apply_until(fh *h, const char *name, const char *path) {
  char out[4096];
  int64_t end = fh_now_ms() + APPLY_DEADLINE_S * 1000;
  for (int tries = 0;; tries++) {
    if (fh_larkctl(h, 30, out, sizeof out, "apply", "-f", path, NULL) == 0) {
      pthread_mutex_lock(&h->mu);
      h->n.applies++;
      h->n.apply_retries += tries;
      pthread_mutex_unlock(&h->mu);
      return 0;
    }
    if (fh_now_ms() > end) {
      fh_log(h, "load: apply of %s failed for %d s", name, APPLY_DEADLINE_S);
      pthread_mutex_lock(&h->mu);
      h->n.apply_failures++;
      pthread_mutex_unlock(&h->mu);
      return -1;
    }
    fh_sleep_ms(1000);
  }
}

static void
emit_report(fh *h, fh_rng *r, int step) {
  char out[1024], data[128];
  pthread_mutex_lock(&h->mu);
  int n = h->njobs;
  char job[64] = "";
  if (n)
    snprintf(job, sizeof job, "%s", h->jobs[fh_between(r, 0, n - 1)]);
  pthread_mutex_unlock(&h->mu);
  if (!job[0])
    return;
  snprintf(data, sizeof data, "{\"step\":%d,\"reward\":0.%d}", step,
           fh_between(r, 0, 9));
  int rc = fh_larkctl(h, 20, out, sizeof out, "emit", job, "metric", "--data",
                      data, NULL);
  pthread_mutex_lock(&h->mu);
  if (rc)
    h->n.report_failures++;
  else
    h->n.reports++;
  pthread_mutex_unlock(&h->mu);
}

void *
fh_load_main(void *arg) {
  fh *h = arg;
  fh_rng r;
  fh_rng_init(&r, h->seed, 1000 + (uint64_t)h->njobs);
  char name[64], path[PATH_MAX + 128];
  for (int step = 1; !h->stop; step++) {
    pthread_mutex_lock(&h->mu);
    int idx = h->njobs;
    pthread_mutex_unlock(&h->mu);
    if (idx < FH_MAX_JOBS) {
      snprintf(name, sizeof name, "fj-%d", idx);
      snprintf(path, sizeof path, "%s/jobs/%s.yaml", h->work, name);
      if (write_job(h, &r, name, path) == 0 &&
          apply_until(h, name, path) == 0) {
        pthread_mutex_lock(&h->mu);
        snprintf(h->jobs[h->njobs++], sizeof h->jobs[0], "%s", name);
        pthread_mutex_unlock(&h->mu);
      }
    }
    for (int i = fh_between(&r, 1, 3); i > 0 && !h->stop; i--)
      emit_report(h, &r, step);
    for (int w = fh_between(&r, 15, 35); w > 0 && !h->stop; w--)
      fh_sleep_ms(100);
  }
  return NULL;
}
