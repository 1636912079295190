/*
 * schedule.c - bench_schedule: how fast the scheduler decides.
 *
 * Part (a), in process: --jobs Jobs of --pods pods each (strategies spread,
 * pack, colocate, disaggregate in turn; templates Actor with a GPU, Rollout
 * and Env with a zone selector) gang-placed onto --nodes nodes with
 * sched_place, through the same code the service runs. Beside it, in the
 * same run, the raw baseline: a plain first-fit loop over the same nodes
 * (cpu, memory and GPU count checks only: no selector, no scores, no
 * names, no gang). Each is run --rounds times on a fresh model; the median
 * round is printed with the ratio.
 *
 * Part (b), end to end through the broker (Jobs submitted to a running
 * lark-scheduler until every pod is bound), is bench_schedule_e2e.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "placement.h"

typedef struct opts {
  int nodes, jobs, pods, rounds, e2e;
} opts;

static int
parse(int argc, char **argv, opts *o) {
  o->nodes = 1000;
  o->jobs = 100;
  o->pods = 100;
  o->rounds = 5;
  o->e2e = 0;
  for (int i = 1; i < argc; i++) {
    int *v = !strcmp(argv[i], "--nodes")    ? &o->nodes
             : !strcmp(argv[i], "--jobs")   ? &o->jobs
             : !strcmp(argv[i], "--pods")   ? &o->pods
             : !strcmp(argv[i], "--rounds") ? &o->rounds
                                            : NULL;
    if (!strcmp(argv[i], "--e2e"))
      o->e2e = 1;
    else if (v && i + 1 < argc && atoi(argv[i + 1]) > 0)
      *v = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_schedule [--nodes N] [--jobs J] [--pods P] "
                      "[--rounds R] [--e2e]\n");
      return -1;
    }
  }
  if (o->pods < 4 || o->pods > SCHED_MAX_PODS) {
    fprintf(stderr, "bench_schedule: --pods from 4 to %d\n", SCHED_MAX_PODS);
    return -1;
  }
  return 0;
}

/* Nodes of 64 cores, 256 GiB, 8 GPUs, in four zones. */
static int
make_nodes(sched_nodes *s, int count) {
  static const char *const zones[] = {"z0", "z1", "z2", "z3"};
  sched_nodes_init(s);
  for (int i = 0; i < count; i++) {
    sched_node n;
    char name[32];
    snprintf(name, sizeof name, "node-%05d", i);
    sched_node_init(&n, name);
    n.capacity.cpu_m = 64000;
    n.capacity.memory_mib = 262144;
    n.capacity.gpu = 8;
    if (sched_node_set_label(&n, "zone", zones[i % 4]) ||
        sched_nodes_put(s, &n)) {
      sched_node_clear(&n);
      return -1;
    }
  }
  return 0;
}

/* Job i: a quarter Actors (1 GPU), half Rollouts, the rest Env. */
static int
make_job(sched_job *job, int i, int pods) {
  char name[32];
  snprintf(name, sizeof name, "job-%04d", i);
  sched_job_init(job, name);
  job->strategy = (sched_strategy)(i % 4);
  sched_template *t = sched_job_add_task(job, "actor");
  if (!t)
    return -1;
  t->head = 1;
  t->replicas = (uint32_t)pods / 4;
  t->req.cpu_m = 4000;
  t->req.memory_mib = 16384;
  t->req.gpu = 1;
  if (!(t = sched_job_add_task(job, "rollout")))
    return -1;
  t->role = SCHED_ROLLOUT;
  t->replicas = (uint32_t)pods / 2;
  t->req.cpu_m = 2000;
  t->req.memory_mib = 4096;
  if (sched_template_set_selector(t, "zone", "z0,z1,z2"))
    return -1;
  if (!(t = sched_job_add_task(job, "env")))
    return -1;
  t->role = SCHED_ENV;
  t->replicas = (uint32_t)(pods - pods / 4 - pods / 2);
  t->req.cpu_m = 1000;
  t->req.memory_mib = 2048;
  return 0;
}

/* One round of sched_place over every Job; returns seconds, or -1. */
static double
round_place(const opts *o, sched_job *jobs, size_t *bound) {
  sched_nodes s;
  sched_placement *p = calloc((size_t)o->jobs, sizeof *p);
  double t0, t1;
  int failed = 0;
  if (!p || make_nodes(&s, o->nodes)) {
    free(p);
    return -1;
  }
  *bound = 0;
  t0 = (double)bus_mono_ns() / 1e9;
  for (int j = 0; j < o->jobs; j++) {
    if (sched_place(&s, &jobs[j], NULL, &p[j]) < 0)
      failed = 1;
    *bound += p[j].n;
  }
  t1 = (double)bus_mono_ns() / 1e9;
  for (int j = 0; j < o->jobs; j++)
    sched_placement_clear(&p[j]);
  free(p);
  sched_nodes_clear(&s);
  return failed ? -1 : t1 - t0;
}

/* The raw baseline: first fit, count checks only. */
static double
round_first_fit(const opts *o, const sched_job *jobs, size_t *bound) {
  sched_nodes s;
  double t0, t1;
  if (make_nodes(&s, o->nodes))
    return -1;
  *bound = 0;
  t0 = (double)bus_mono_ns() / 1e9;
  for (int j = 0; j < o->jobs; j++)
    for (int k = 0; k < jobs[j].ntasks; k++) {
      const sched_template *t = &jobs[j].tasks[k];
      for (uint32_t r = 0; r < t->replicas; r++)
        for (size_t i = 0; i < s.n; i++) {
          sched_node *n = s.v[i];
          if (n->cpu_used_m + t->req.cpu_m > n->capacity.cpu_m ||
              n->memory_used_mib + t->req.memory_mib > n->capacity.memory_mib ||
              t->req.gpu > sched_node_free_gpus(n))
            continue;
          n->cpu_used_m += t->req.cpu_m;
          n->memory_used_mib += t->req.memory_mib;
          for (uint32_t g = 0; g < t->req.gpu; g++)
            n->gpu_taken |= 1ull << __builtin_ctzll(~n->gpu_taken);
          n->pods++;
          (*bound)++;
          break;
        }
    }
  t1 = (double)bus_mono_ns() / 1e9;
  sched_nodes_clear(&s);
  return t1 - t0;
}

static int
cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int
main(int argc, char **argv) {
  opts o;
  if (parse(argc, argv, &o))
    return 2;
  if (o.e2e) {
    fprintf(stderr, "bench_schedule: end to end is bench_schedule_e2e\n");
    return 2;
  }
  sched_job *jobs = calloc((size_t)o.jobs, sizeof *jobs);
  double *tp = calloc((size_t)o.rounds, sizeof *tp);
  double *tb = calloc((size_t)o.rounds, sizeof *tb);
  size_t bound = 0, raw_bound = 0;
  int rc = 1;
  if (!jobs || !tp || !tb)
    goto out;
  for (int j = 0; j < o.jobs; j++)
    if (make_job(&jobs[j], j, o.pods))
      goto out;
  for (int r = 0; r < o.rounds; r++) {
    if ((tp[r] = round_place(&o, jobs, &bound)) < 0 ||
        (tb[r] = round_first_fit(&o, jobs, &raw_bound)) < 0)
      goto out;
  }
  qsort(tp, (size_t)o.rounds, sizeof *tp, cmp_double);
  qsort(tb, (size_t)o.rounds, sizeof *tb, cmp_double);
  double place = tp[o.rounds / 2], raw = tb[o.rounds / 2];
  double total = (double)o.jobs * o.pods;
  printf("schedule (a) in process: %d jobs x %d pods onto %d nodes, "
         "median of %d rounds\n",
         o.jobs, o.pods, o.nodes, o.rounds);
  printf("  sched_place (gang, scored): %zu pods bound in %.3f ms: "
         "%.0f pods/s\n",
         bound, place * 1e3, total / place);
  printf("  raw first fit (no scores):  %zu pods bound in %.3f ms: "
         "%.0f pods/s\n",
         raw_bound, raw * 1e3, total / raw);
  printf("  ratio sched_place / raw: %.2f\n", raw / place);
  printf("schedule (b) end to end: see bench_schedule_e2e\n");
  rc = bound == (size_t)total ? 0 : 1;
  if (rc)
    fprintf(stderr, "bench_schedule: %zu of %.0f pods bound\n", bound, total);
out:
  for (int j = 0; jobs && j < o.jobs; j++)
    sched_job_clear(&jobs[j]);
  free(jobs);
  free(tp);
  free(tb);
  return rc;
}
