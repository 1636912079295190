/*
 * bench/fleet_gang.c - gang bursts on a fleet of nodes that run as
 * lark-edge runs: from a pod's binding to its node having its desired
 * state, beside the core-NATS floor to the same nodes.
 *
 * The bed of bench_fleet_idle (fleetsim.c): a broker with the platform's
 * accounts (every node its own nkey user), a real lark-scheduler, the
 * nodes in bench_uvfleet processes (one libuv loop each, no thread per
 * node; each registers, heartbeats, holds its slice's pull open and acks
 * each desired state, as lark-edge does). Once every node's consumer is
 * open, J Jobs of P pods, spread, are submitted through the command path
 * at --rate pods/s (0: as fast as the commands go). Each node writes down
 * when it had each desired state (bench_uvfleet --got), as a push ahead
 * of its node stream and as the stream's stored copy; the figures are
 * gang.c's, from each pod's binding (its Job's job.placed, the broker's
 * stored time) to each copy, the stored one whole and split at the node
 * stream's stored time.
 *
 * The floor, in the same run and of the same shape: as many core-NATS
 * messages to the same nodes' connections (pod i of a gang to node i%N's
 * _INBOX_<node>.f), a gang's P at once, the gangs as far apart as the
 * run's were on average (from the first desired state stored to the last
 * at its node, over J), each message timed from its gang's start
 * as a desired state is from its binding. Printed beside both: the CPU
 * time the broker, the scheduler and the node processes took over each.
 *
 *   bench_fleet_gang [--nodes N] [--jobs J] [--pods P] [--rate R]
 *                    [--procs K] [--creds DIR]
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "fleet.h"
#include "fleetsim.h"
#include "gang.h"

typedef struct run {
  int nodes, jobs, pods, rate, procs;
  const char *creds;
  long want;
} run;

/* CPU seconds so far of the broker, the scheduler and the node
 * processes, in that order. */
static void
cpu_now(const fleetsim *f, double out[3]) {
  out[0] = bench_cpu_s(f->srv.pid);
  out[1] = bench_cpu_s(f->sched);
  out[2] = 0;
  for (int p = 0; p < f->nprocs; p++)
    out[2] += bench_cpu_s(f->pids[p]);
}

static void
cpu_report(const double a[3], const double b[3], double secs) {
  printf("  CPU over it (%.2f s): broker %.2f s, scheduler %.2f s, "
         "nodes %.2f s\n",
         secs, b[0] - a[0], b[1] - a[1], b[2] - a[2]);
}

/* Wait until the node processes have counted want of what got counts
 * (consumers open, or messages got); -1 after limit_s. */
static int
wait_count(fleetsim *f, long want, int cons, int limit_s) {
  fleetsim_counts c;
  double took;
  int which = cons ? FLEETSIM_CONS : FLEETSIM_GOT;
  if (fleetsim_wait(f, which, want, limit_s, 20, &c, &took) == 0)
    return 0;
  printf("fleet_gang: only %ld of %ld after %d s (connected %ld, errors %ld)\n",
         cons ? c.cons : c.got, want, limit_s, c.conn, c.err);
  return -1;
}

/* Every "d" line (desired states: into seen, up to cap), "p" line (the
 * copies pushed ahead of them, the same) or "f" line (the floor: its
 * latency into fleet_lat) the node processes wrote under dir. Returns the count
 * of lines taken. */
static long
read_got(const char *dir, char kind, gang_seen *seen, long cap) {
  DIR *d = opendir(dir);
  struct dirent *e;
  long n = 0;
  while (d && (e = readdir(d))) {
    char path[600], line[128], job[32];
    long long a, b;
    if (strncmp(e->d_name, "got-", 4))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *fp = fopen(path, "r");
    while (fp && fgets(line, sizeof line, fp)) {
      if (line[0] != kind)
        continue;
      if (kind == 'p' && sscanf(line, "p %31s %lld", job, &b) == 2 && n < cap)
        seen[n++] = (gang_seen){gang_job_index(job), 0, b};
      else if (kind == 'd' &&
               sscanf(line, "d %31s %lld %lld", job, &a, &b) == 3 && n < cap)
        seen[n++] = (gang_seen){gang_job_index(job), a, b};
      else if (kind == 'f' && sscanf(line, "f %lld %lld", &a, &b) == 2)
        fleet_lat_add(b - a), n++;
    }
    if (fp)
      fclose(fp);
  }
  if (d)
    closedir(d);
  return n;
}

/* The run's mean time per gang: from the first desired state stored to
 * the last at its node, over the Jobs. */
static int64_t
gang_gap(const gang_seen *seen, long n, int jobs) {
  int64_t first = INT64_MAX, last = 0;
  for (long i = 0; i < n; i++) {
    first = seen[i].stored < first ? seen[i].stored : first;
    last = seen[i].ns > last ? seen[i].ns : last;
  }
  return n && last > first ? (last - first) / jobs : 0;
}

/* The floor: r->jobs gangs of r->pods core messages to the nodes'
 * connections, gap apart, each carrying its gang's start. */
static void
floor_send(bus_conn *c, const run *r, int64_t gap) {
  int64_t start = bus_wall_ns();
  for (int j = 0; j < r->jobs; j++) {
    int64_t at = start + gap * j, now = bus_wall_ns();
    if (at > now)
      usleep((useconds_t)((at - now) / 1000));
    char body[24];
    int k = snprintf(body, sizeof body, "%lld", (long long)bus_wall_ns());
    for (long i = 0; i < r->pods; i++) {
      char subject[48];
      snprintf(subject, sizeof subject, "_INBOX_n%ld.f", i % r->nodes);
      if (bus_conn_publish(c, subject, body, (size_t)k))
        bench_die("floor", bus_last_error());
    }
  }
}

static int
burst(fleetsim *f, const run *r, gang_seen *seen, gang_seen *pushed) {
  bus_conn *admin = fleetsim_admin();
  double a[3], b[3];
  printf("fleet_gang: %ld pods (%d Jobs x %d) at %d pods/s (0: as fast as "
         "commands go)\n",
         r->want, r->jobs, r->pods, r->rate);
  cpu_now(f, a);
  double t0 = bench_now_s();
  gang_submit(admin, r->jobs, r->pods, r->rate);
  int rc = wait_count(f, r->want, 0, 120);
  double took = bench_now_s() - t0;
  cpu_now(f, b);
  printf("fleet_gang: desired states at their nodes in %.2f s\n", took);
  cpu_report(a, b, took);
  long n = read_got(f->dir, 'd', seen, r->want);
  long np = read_got(f->dir, 'p', pushed, r->want);
  printf("fleet_gang: %ld of %ld desired states pushed ahead of the stream\n",
         np, r->want);
  gang_report(admin, seen, n, pushed, np, r->jobs);
  int64_t gap = gang_gap(seen, n, r->jobs);
  cpu_now(f, a);
  t0 = bench_now_s();
  floor_send(admin, r, gap);
  rc |= wait_count(f, 2 * r->want, 0, 60);
  took = bench_now_s() - t0;
  cpu_now(f, b);
  fleet_lat_reset();
  read_got(f->dir, 'f', NULL, 0);
  printf("floor: gangs of %d core messages %.1f ms apart\n", r->pods,
         (double)gap / 1e6);
  fleet_lat_report("floor gang start -> node");
  cpu_report(a, b, took);
  return rc || n < r->want ? -1 : 0;
}

int
main(int argc, char **argv) {
  char creds[512];
  run r = {.nodes = 1000, .jobs = 10, .pods = 1000, .procs = 1};
  const bench_opt opts[] = {{"--nodes", .i = &r.nodes},
                            {"--jobs", .i = &r.jobs},
                            {"--pods", .i = &r.pods},
                            {"--rate", .i = &r.rate},
                            {"--procs", .i = &r.procs},
                            {"--creds", .s = &r.creds},
                            {NULL}};
  if (bench_opts(argc, argv, opts) || r.nodes < 1 || r.jobs < 1 || r.pods < 1 ||
      r.procs < 1 || r.rate < 0)
    bench_die("usage", "bench_fleet_gang [--nodes N] [--jobs J] [--pods P] "
                       "[--rate R] [--procs K] [--creds DIR]");
  if (!r.creds) {
    fleetsim_creds_dir(creds, sizeof creds);
    r.creds = creds;
  }
  r.want = (long)r.jobs * r.pods;
  gang_seen *seen = calloc((size_t)r.want, sizeof *seen);
  gang_seen *pushed = calloc((size_t)r.want, sizeof *pushed);
  if (!seen || !pushed)
    bench_die("memory", "out of memory");
  fleet_lat_init(r.want);
  fleetsim f;
  fleetsim_up(&f, argv[0], "fleet_gang", r.creds, r.nodes, 1, 0);
  /* room for every pod: a node of lark-edge's default (8 cores) would
   * take 8 of the ten Jobs' spread pods */
  const char *flags[] = {"--got", f.dir, "--cpu", "64", NULL};
  double t0 = bench_now_s();
  fleetsim_nodes(&f, r.nodes, r.procs, flags);
  if (wait_count(&f, r.nodes, 1, 120))
    bench_die("fleet_gang", "the nodes did not all open their consumers");
  printf("fleet_gang: %d nodes registered, consumers open in %.1f s (%d "
         "processes)\n",
         r.nodes, bench_now_s() - t0, r.procs);
  sleep(2); /* past the start: every node's beat in its steady phase */
  int rc = burst(&f, &r, seen, pushed);
  fleetsim_down(&f);
  fleet_lat_free();
  free(pushed);
  free(seen);
  return rc ? 1 : 0;
}
