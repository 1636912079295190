/*
 * bench/commands.c - commands per second on a syncing broker.
 *
 * Two nats-servers started by this program in the same run: one with the
 * server's default lazy sync, one with `jetstream { sync_interval: always
 * }` as broker-config/single.conf.in sets it. Each gets the platform's
 * streams, a real lark-scheduler (a process, as `larkctl up` starts it)
 * and enough Nodes for every Job of the run. Then, on each:
 *
 *   - job.apply of 1-pod Jobs, one at a time, as `larkctl apply` sends
 *     them: a round trip each (the scheduler checks the Job against its
 *     view, appends job.submitted with the broker's check, replies
 *     {ok, seq}); the scheduler places each Job as it comes, so its own
 *     decisions (job.placed, phases, the pod's desired state) are written
 *     beside the commands, as on a live platform;
 *   - the same from K clients at once, each one at a time, to show whether
 *     the service takes more than one command per sync under load;
 *   - job.stop of the Jobs just applied, one at a time: a command that
 *     appends without first waiting for the view to catch up;
 *   - as raw baselines on the same server: bus_append one at a time with
 *     the broker's check (the command's own write, nothing around it) and
 *     core-NATS request/reply round trips to a trivial responder (the
 *     command's transport, no write).
 *
 * Each is reported as operations/s with p50/p99 latency. Runs go lazy,
 * always, always, lazy, so load drift on a shared machine hits both
 * alike; each figure is over its two runs.
 *
 *   bench_commands [--commands N] [--clients K]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

#define ROUNDS 2
#define MAX_CLIENTS 64

/* One kind of operation on one server: every latency of both runs and
 * the wall time they took, so the rate is total count over total time. */
typedef struct series {
  double *lat; /* seconds, count of them */
  long count;
  double wall;
} series;

enum { S_ECHO, S_APPEND, S_ONE, S_MANY, S_STOP, S_KINDS };

typedef struct server {
  const char *label;
  lt_natsd natsd;
  bus_conn *c;     /* commands, appends and requests */
  bus_conn *echo;  /* the trivial responder's own connection */
  bus_serve *serv; /* its subscription */
  pid_t sched;
  char dir[256]; /* the scheduler's view and log */
  series s[S_KINDS];
} server;

typedef struct client {
  const char *url;
  int round, id;
  long from, n;
  double *lat; /* n slots */
} client;

static void
series_add(series *s, const double *lat, long n, double wall) {
  s->lat = realloc(s->lat, sizeof *s->lat * (size_t)(s->count + n));
  if (!s->lat)
    bench_die("memory", "latencies");
  memcpy(s->lat + s->count, lat, sizeof *lat * (size_t)n);
  s->count += n;
  s->wall += wall;
}

static int
cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------ baselines */

static void
on_echo(bus_conn *c, const char *subject, const char *reply, const void *data,
        size_t len, void *ud) {
  (void)subject, (void)data, (void)len, (void)ud;
  if (reply)
    bus_conn_publish(c, reply, "\x81\xa2ok\xc3", 5);
}

/* n core-NATS round trips to the responder, one at a time. */
static void
run_echo(server *sv, long n, double *lat) {
  double t0 = bench_now_s();
  for (long i = 0; i < n; i++) {
    void *reply = NULL;
    size_t len = 0;
    double t = bench_now_s();
    if (bus_conn_request(sv->c, "bench.echo", "\x80", 1, 5000, &reply, &len))
      bench_die("echo", bus_last_error());
    lat[i] = bench_now_s() - t;
    free(reply);
  }
  series_add(&sv->s[S_ECHO], lat, n, bench_now_s() - t0);
}

/* n checked appends to new subjects (prev 0: the subject must be empty,
 * as job.submitted for a new Job), one at a time. */
static void
run_append(server *sv, long n, int round, double *lat) {
  char id[33], subject[80];
  bus_event ev;
  msgpack_sbuffer data;
  msgpack_sbuffer_init(&data);
  bench_sample_event(&ev, &data, id, 1); /* {text: "x"} */
  double t0 = bench_now_s();
  for (long i = 0; i < n; i++) {
    snprintf(subject, sizeof subject, "lark.ev.sample.r%d-%ld", round, i);
    bus_event_new_id(id);
    double t = bench_now_s();
    if (bus_append(sv->c, subject, &ev, BUS_APPEND_CHECK, NULL, NULL))
      bench_die("append", bus_last_error());
    lat[i] = bench_now_s() - t;
  }
  msgpack_sbuffer_destroy(&data);
  series_add(&sv->s[S_APPEND], lat, n, bench_now_s() - t0);
}

/* -------------------------------------------------------------- commands */

/* Jobs from..from+n-1 of this round and client, one at a time. */
static void
apply_jobs(bus_conn *c, int round, int id, long from, long n, double *lat) {
  char name[48];
  for (long i = 0; i < n; i++) {
    snprintf(name, sizeof name, "r%dc%d-%ld", round, id, from + i);
    double t = bench_now_s();
    bench_add_job(c, name, 1, "pack");
    lat[i] = bench_now_s() - t;
  }
}

static void *
client_main(void *arg) {
  client *cl = arg;
  bus_conn *c = bench_connect(cl->url, "bench-client", 0);
  apply_jobs(c, cl->round, cl->id, cl->from, cl->n, cl->lat);
  bus_conn_close(c);
  return NULL;
}

/* n Jobs from k clients at once (each its own connection), n/k each. */
static void
run_many(server *sv, long n, int k, int round, double *lat) {
  pthread_t th[MAX_CLIENTS];
  client cl[MAX_CLIENTS];
  long from = 0;
  double t0 = bench_now_s();
  for (int i = 0; i < k; i++) {
    long part = n / k + (i < n % k);
    cl[i] = (client){sv->natsd.url, round, i + 1, from, part, lat + from};
    from += part;
    if (pthread_create(&th[i], NULL, client_main, &cl[i]))
      bench_die("thread", "pthread_create");
  }
  for (int i = 0; i < k; i++)
    pthread_join(th[i], NULL);
  series_add(&sv->s[S_MANY], lat, n, bench_now_s() - t0);
}

/*
 * job.stop of the Jobs the one-client run applied, one at a time: a
 * command that appends with the version its view holds and does not first
 * wait for the view to catch up with the stream (job.apply does, to check
 * a new Job's names against every Job before it). A conflict (the view
 * behind a phase the scheduler just wrote) is retried, and timed as one.
 */
static void
run_stop(server *sv, long n, int round, double *lat) {
  char name[48];
  double t0 = bench_now_s();
  for (long i = 0; i < n; i++) {
    bus_packbuf b;
    bus_packbuf_init(&b);
    snprintf(name, sizeof name, "r%dc0-%ld", round, i);
    msgpack_pack_map(&b.pk, 2);
    bus_pack_kv_str(&b.pk, "key", name);
    bus_pack_kv_str(&b.pk, "name", name);
    double t = bench_now_s();
    for (int tries = 0;; tries++) {
      void *reply = NULL;
      size_t len = 0;
      if (bus_conn_request(sv->c, "lark.cmd.admin.job.stop", b.sb.data,
                           b.sb.size, 10000, &reply, &len))
        bench_die("job.stop", bus_last_error());
      int refused = len > 8 && memmem(reply, len, "error", 5);
      free(reply);
      if (!refused)
        break;
      if (tries == 20)
        bench_die("job.stop", "refused");
      usleep(10 * 1000);
    }
    lat[i] = bench_now_s() - t;
    bus_packbuf_destroy(&b);
  }
  series_add(&sv->s[S_STOP], lat, n, bench_now_s() - t0);
}

static void
run_one(server *sv, long n, int round, double *lat) {
  double t0 = bench_now_s();
  apply_jobs(sv->c, round, 0, 0, n, lat);
  series_add(&sv->s[S_ONE], lat, n, bench_now_s() - t0);
}

/* ---------------------------------------------------------------- setup */

static void
start_server(server *sv, const char *argv0, int always, long nodes) {
  lt_tmpdir(sv->dir, sizeof sv->dir, always ? "cmd-always" : "cmd-lazy");
  bench_natsd_start(&sv->natsd, sv->dir, always, NULL);
  sv->c = bench_connect(sv->natsd.url, "bench", 0);
  if (lt_streams(sv->c, 120000))
    bench_die("streams", bus_last_error());
  sv->echo = bench_connect(sv->natsd.url, "bench-echo", 0);
  if (bus_conn_serve(sv->echo, "bench.echo", NULL, on_echo, NULL, &sv->serv))
    bench_die("serve", bus_last_error());
  sv->sched =
      bench_start_service(argv0, "lark-scheduler", sv->natsd.url, sv->dir);
  if (sv->sched < 0)
    bench_die("lark-scheduler", "fork");
  bench_wait_up(sv->c, "scheduler");
  for (long i = 0; i < nodes; i++) {
    char name[32];
    snprintf(name, sizeof name, "n%04ld", i);
    bench_add_node(sv->c, name);
  }
}

static void
stop_server(server *sv) {
  bench_stop_service(sv->sched, "lark-scheduler");
  bus_conn_close(sv->echo);
  bus_conn_close(sv->c);
  lt_natsd_stop(&sv->natsd);
  lt_rmtree(sv->dir);
  for (int k = 0; k < S_KINDS; k++)
    free(sv->s[k].lat);
}

static void
measure(server *sv, long n, int k, int round, double *lat) {
  run_echo(sv, n, lat);
  run_append(sv, n, round, lat);
  run_one(sv, n, round, lat);
  run_many(sv, n, k, round, lat);
  run_stop(sv, n, round, lat);
}

/* "rate  p50  p99" of one series, milliseconds. */
static void
print_cell(series *s, double *rate) {
  qsort(s->lat, (size_t)s->count, sizeof *s->lat, cmp_double);
  long i99 = s->count * 99 / 100;
  *rate = (double)s->count / s->wall;
  printf(" %8.0f %6.2f %6.2f", *rate, s->lat[s->count / 2] * 1e3,
         s->lat[i99 < s->count ? i99 : s->count - 1] * 1e3);
}

int
main(int argc, char **argv) {
  long n = 1000;
  int k = 4;
  const bench_opt opts[] = {
      {"--commands", .l = &n}, {"--clients", .i = &k}, {NULL}};
  if (bench_opts(argc, argv, opts) < 0) {
    fprintf(stderr, "usage: bench_commands [--commands N] [--clients K]\n");
    return 2;
  }
  if (n <= 0 || k <= 0 || k > MAX_CLIENTS || n < k)
    bench_die("usage", "--commands N >= --clients K, 1 <= K <= 64");
  /* every pod needs 1 of a Node's 64 CPUs: room for all of them, so each
   * Job is placed (a Pending Job would decide differently) */
  long nodes = (2 * n * ROUNDS) / 64 + 1;
  double *lat = malloc(sizeof *lat * (size_t)n);
  server lazy = {.label = "lazy"}, always = {.label = "always"};
  if (!lat)
    bench_die("memory", "latencies");
  start_server(&lazy, argv[0], 0, nodes);
  start_server(&always, argv[0], 1, nodes);
  measure(&lazy, n, k, 1, lat);
  measure(&always, n, k, 1, lat);
  measure(&always, n, k, 2, lat);
  measure(&lazy, n, k, 2, lat);
  printf("bench_commands: %ld operations per run, two runs per server, "
         "lark-scheduler with %ld Nodes\n",
         n, nodes);
  printf("  %-32s %23s %23s %6s\n", "", "lazy: /s  p50  p99 ms",
         "always: /s  p50  p99 ms", "ratio");
  static const char *const what[S_KINDS] = {
      "core request/reply (raw)", "checked append (raw)",
      "job.apply, one client", "job.apply, K clients", "job.stop, one client"};
  for (int s = 0; s < S_KINDS; s++) {
    double rl, ra;
    char label[64];
    snprintf(label, sizeof label, "%s", what[s]);
    if (s == S_MANY)
      snprintf(label, sizeof label, "job.apply, %d clients", k);
    printf("  %-32s", label);
    print_cell(&lazy.s[s], &rl);
    print_cell(&always.s[s], &ra);
    printf(" %6.2f\n", ra / rl);
  }
  stop_server(&always);
  stop_server(&lazy);
  free(lat);
  return 0;
}
