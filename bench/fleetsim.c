/*
 * fleetsim.c - the bed of the fleet-size benchmarks (fleetsim.h).
 *
 * The nodes' credentials are made once under a directory the caller
 * names and kept: ten thousand nkeys and the registry take a while, and
 * the accounts file is rendered from them for each broker. A node counts
 * as Ready once a node.registered of it is in LARK_EVENTS (the scheduler
 * appends it when it takes the node's registration; apply marks the
 * Node Ready): an admin subscription on lark.ev.node.* marks each node
 * seen.
 */
#include "fleetsim.h"

#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "deploy.h"
#include "secure.h"

static bus_conn *admin;
static int memory_streams, streams_at_add;
static fleetsim *live; /* what SIGINT/SIGTERM stops */
static bus_serve *watch;
static atomic_uchar *seen;
static atomic_long nseen;
static int seen_cap;

/* Credentials for everyone, kept across runs (fleetsim_up). */
static void
make_creds(const char *dir, int n) {
  char name[32], done[600];
  /* a mark made once all n are in the registry (another run may be
   * making them right now: the registry's lock orders the two) */
  snprintf(done, sizeof done, "%s/fleet-%d.done", dir, n);
  if (access(done, R_OK) == 0)
    return;
  double t0 = bench_now_s();
  lark_mkdirs(dir, 0700);
  if (lark_creds_ensure(dir, "admin", LARK_ROLE_ADMIN, NULL, NULL) ||
      lark_creds_ensure(dir, "lark-scheduler", LARK_ROLE_SERVICE, NULL, NULL))
    bench_die("credentials", lark_cfg_error());
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "n%d", i);
    if (lark_creds_ensure(dir, name, LARK_ROLE_NODE, NULL, NULL))
      bench_die("credentials", lark_cfg_error());
  }
  FILE *f = fopen(done, "w");
  if (f)
    fclose(f);
  printf("fleetsim: %d node credentials made in %.1f s under %s\n", n,
         bench_now_s() - t0, dir);
}

/* A node's event: mark it seen (Ready) the first time. */
static void
on_node_event(bus_conn *c, const char *subject, const char *reply,
              const void *data, size_t len, void *ud) {
  (void)c, (void)reply, (void)data, (void)len, (void)ud;
  const char *p = strrchr(subject, '.');
  if (!p || p[1] != 'n')
    return;
  int i = atoi(p + 2);
  if (i >= 0 && i < seen_cap && !atomic_exchange(&seen[i], 1))
    atomic_fetch_add(&nseen, 1);
}

static pid_t
start_scheduler(fleetsim *f, int timeout_ms) {
  char self[4096], bin[4200], data[512], log[512], cr[600], t[32];
  snprintf(self, sizeof self, "%s", f->argv0);
  snprintf(bin, sizeof bin, "%s/lark-scheduler", dirname(self));
  snprintf(data, sizeof data, "%s/scheduler", f->dir);
  snprintf(log, sizeof log, "%s/lark-scheduler.log", f->dir);
  lark_creds_path(f->creds, "lark-scheduler", cr, sizeof cr);
  snprintf(t, sizeof t, "%d", timeout_ms);
  pid_t pid = fork();
  if (pid == 0) {
    if (timeout_ms > 0)
      setenv("LARK_NODE_TIMEOUT_MS", t, 1);
    if (!freopen(log, "w", stderr))
      _exit(126);
    execl(bin, bin, "--url", f->srv.url, "--data", data, "--creds", cr,
          (char *)NULL);
    _exit(127);
  }
  if (pid < 0)
    bench_die("lark-scheduler", "fork failed");
  return pid;
}

/* The accounts of everyone in the registry, next to the broker's config
 * (nats-server reads an include relative to the file including it). */
static void
render_accounts(fleetsim *f) {
  char path[600];
  lark_principal *p = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/accounts.conf", f->dir);
  if (lark_creds_load(f->creds, &p, &n) || lark_render_accounts(p, n, path))
    bench_die("accounts", lark_cfg_error());
  free(p);
}

void
fleetsim_creds_dir(char *out, size_t cap) {
  const char *tmp = getenv("TMPDIR");
  snprintf(out, cap, "%s/larkbench-fleet-creds", tmp && *tmp ? tmp : "/tmp");
}

void
fleetsim_memory_streams(int on) {
  memory_streams = on;
}

void
fleetsim_streams_at_add(int on) {
  streams_at_add = on;
}

/* Every node's stream, as `larkctl node add` makes each on a running
 * broker (bus_node_streams_ensure), all in one call. */
static void
make_node_streams(int n) {
  char(*names)[16] = calloc((size_t)n, sizeof *names);
  const char **nodes = calloc((size_t)n, sizeof *nodes);
  if (!names || !nodes)
    bench_die("fleetsim", "out of memory");
  for (int i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], "n%d", i);
    nodes[i] = names[i];
  }
  double t0 = bench_now_s();
  int made = 0;
  if (bus_node_streams_ensure(admin, nodes, (size_t)n, &made) < 0)
    bench_die("node streams", bus_last_error());
  printf("fleetsim: %d node streams made in %.1f s (as node add makes "
         "them)\n",
         made, bench_now_s() - t0);
  free(names);
  free(nodes);
}

/* Interrupted: the node processes, the scheduler and the broker go too. */
static void
on_signal(int sig) {
  if (live) {
    for (int p = 0; p < live->nprocs; p++)
      kill(live->pids[p], SIGKILL);
    if (live->sched > 0)
      kill(live->sched, SIGKILL);
    if (live->srv.pid > 0)
      kill(live->srv.pid, SIGKILL);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void
fleetsim_up(fleetsim *f, const char *argv0, const char *tag, const char *creds,
            int n, int with_sched, int timeout_ms) {
  char conf[600];
  memset(f, 0, sizeof *f);
  f->argv0 = argv0;
  snprintf(f->creds, sizeof f->creds, "%s", creds);
  make_creds(f->creds, n);
  lt_tmpdir(f->dir, sizeof f->dir, tag);
  /* the broker's own files live in the run's directory */
  snprintf(conf, sizeof conf, "%s/nats.conf", f->dir);
  double t0 = bench_now_s();
  render_accounts(f);
  lark_broker_opts o;
  lark_broker_opts_init(&o);
  o.run_dir = f->dir;
  if (lark_render_conf("single", &o, conf) ||
      lt_natsd_start(&f->srv, conf, NULL))
    bench_die("broker", lark_cfg_error());
  printf("fleetsim: broker with %d node users up in %.1f s\n", n,
         bench_now_s() - t0);
  live = f;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  bus_streams_opts so;
  bus_streams_opts_init(&so);
  so.dedupe_ns = INT64_C(120000000000);
  so.memory = memory_streams;
  if (lt_connect_as(f->srv.url, f->creds, "admin", 10000, &admin) ||
      bus_streams_ensure(admin, &so))
    bench_die("admin", bus_last_error());
  if (streams_at_add)
    make_node_streams(n);
  seen_cap = n;
  if (!(seen = calloc((size_t)n, 1)))
    bench_die("fleetsim", "out of memory");
  if (bus_conn_serve(admin, "lark.ev.node.*", NULL, on_node_event, NULL,
                     &watch))
    bench_die("watch", bus_last_error());
  f->sched = with_sched ? start_scheduler(f, timeout_ms) : 0;
}

void
fleetsim_nodes(fleetsim *f, int n, int procs, const char *const *flags) {
  char self[4096], bin[4200], first[16], count[16], log[600];
  snprintf(self, sizeof self, "%s", f->argv0);
  snprintf(bin, sizeof bin, "%s/bench_uvfleet", dirname(self));
  if (procs > FLEETSIM_PROCS_MAX)
    procs = FLEETSIM_PROCS_MAX;
  for (int p = 0; p < procs; p++) {
    int lo = (int)((long)n * p / procs), hi = (int)((long)n * (p + 1) / procs);
    int fd[2];
    if (pipe(fd))
      bench_die("pipe", "cannot make one");
    snprintf(first, sizeof first, "%d", lo);
    snprintf(count, sizeof count, "%d", hi - lo);
    snprintf(log, sizeof log, "%s/uvfleet-%d.log", f->dir, p);
    const char *argv[32] = {bin,       "--url", f->srv.url, "--creds", f->creds,
                            "--first", first,   "--count",  count};
    int k = 9;
    for (int i = 0; flags && flags[i] && k < 30; i++)
      argv[k++] = flags[i];
    pid_t pid = fork();
    if (pid == 0) {
      dup2(fd[1], 1);
      close(fd[0]);
      if (!freopen(log, "w", stderr))
        _exit(126);
      execv(bin, (char *const *)argv);
      _exit(127);
    }
    close(fd[1]);
    fcntl(fd[0], F_SETFL, O_NONBLOCK);
    f->pids[f->nprocs] = pid;
    f->fds[f->nprocs] = fd[0];
    f->line[f->nprocs][0] = 0;
    memset(&f->each[f->nprocs], 0, sizeof f->each[0]);
    f->nprocs++;
  }
}

void
fleetsim_nodes_stop(fleetsim *f) {
  for (int p = 0; p < f->nprocs; p++) {
    kill(f->pids[p], SIGTERM);
    waitpid(f->pids[p], NULL, 0);
    close(f->fds[p]);
  }
  f->nprocs = 0;
}

/* A complete "tick ..." line of process p into its counts. */
static void
take_line(fleetsim *f, int p, const char *s) {
  fleetsim_counts *c = &f->each[p];
  sscanf(s, "tick conn=%ld cons=%ld pulls=%ld hb=%ld got=%ld err=%ld", &c->conn,
         &c->cons, &c->pulls, &c->hb, &c->got, &c->err);
}

void
fleetsim_poll(fleetsim *f, fleetsim_counts *sum) {
  memset(sum, 0, sizeof *sum);
  for (int p = 0; p < f->nprocs; p++) {
    char buf[4096];
    ssize_t r;
    while ((r = read(f->fds[p], buf, sizeof buf - 1)) > 0) {
      buf[r] = 0;
      for (char *s = buf, *nl; *s; s = nl + 1) {
        size_t have = strlen(f->line[p]);
        if (!(nl = strchr(s, '\n'))) {
          snprintf(f->line[p] + have, sizeof f->line[p] - have, "%s", s);
          break;
        }
        *nl = 0;
        snprintf(f->line[p] + have, sizeof f->line[p] - have, "%s", s);
        take_line(f, p, f->line[p]);
        f->line[p][0] = 0;
      }
    }
    const fleetsim_counts *c = &f->each[p];
    sum->conn += c->conn, sum->cons += c->cons, sum->pulls += c->pulls;
    sum->hb += c->hb, sum->got += c->got, sum->err += c->err;
  }
}

/* Each of the broker's client sockets, from ss: a socket's line (its
 * peer's address) and then a line of its counters. */
static void
socket_bytes(const fleetsim *f, fleetsim_broker *b) {
  char cmd[160], line[2048];
  size_t cap = 0;
  snprintf(cmd, sizeof cmd,
           "ss -tinH state established '( sport = :%d )' 2>/dev/null",
           f->srv.port);
  FILE *p = popen(cmd, "r");
  if (!p)
    return;
  while (fgets(line, sizeof line, p)) {
    const char *s;
    unsigned long long v;
    if (line[0] != ' ' && line[0] != '\t') { /* recv-q send-q local peer */
      if (bus_grow(&b->socks, (size_t)b->conns, &cap, sizeof *b->socks, 1024))
        break;
      fleetsim_sock *k = &b->socks[b->conns++];
      memset(k, 0, sizeof *k);
      s = strrchr(line, ':');
      k->port = s ? (unsigned)atoi(s + 1) : 0;
      continue;
    }
    if (b->conns == 0)
      continue;
    fleetsim_sock *k = &b->socks[b->conns - 1];
    if ((s = strstr(line, "bytes_acked:")) && sscanf(s + 12, "%llu", &v) == 1)
      k->out = v;
    if ((s = strstr(line, "bytes_received:")) &&
        sscanf(s + 15, "%llu", &v) == 1)
      k->in = v;
  }
  pclose(p);
}

static int
by_port(const void *x, const void *y) {
  const fleetsim_sock *a = x, *b = y;
  return a->port < b->port ? -1 : a->port > b->port;
}

void
fleetsim_bytes(const fleetsim_broker *a, const fleetsim_broker *b, uint64_t *in,
               uint64_t *out) {
  *in = *out = 0;
  for (long i = 0, j = 0; i < a->conns && j < b->conns;) {
    const fleetsim_sock *x = &a->socks[i], *y = &b->socks[j];
    if (x->port != y->port) {
      x->port < y->port ? i++ : j++;
      continue;
    }
    if (y->in >= x->in && y->out >= x->out)
      *in += y->in - x->in, *out += y->out - x->out;
    i++, j++;
  }
}

void
fleetsim_broker_free(fleetsim_broker *b) {
  free(b->socks);
  b->socks = NULL;
}

void
fleetsim_broker_read(const fleetsim *f, fleetsim_broker *b) {
  char path[64], buf[2048];
  memset(b, 0, sizeof *b);
  snprintf(path, sizeof path, "/proc/%d/stat", (int)f->srv.pid);
  FILE *fp = fopen(path, "r");
  if (fp && fgets(buf, sizeof buf, fp)) {
    /* after "(comm)": state is field 3, utime 14, stime 15, rss 24 */
    char *s = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    long rss = 0;
    if (s && sscanf(s + 2,
                    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu "
                    "%*d %*d %*d %*d %*d %*d %*u %*u %ld",
                    &ut, &st, &rss) == 3) {
      b->cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
      b->rss_kb = rss * (sysconf(_SC_PAGESIZE) / 1024);
    }
  }
  if (fp)
    fclose(fp);
  snprintf(path, sizeof path, "/proc/%d/fd", (int)f->srv.pid);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "ls %s 2>/dev/null | wc -l", path);
  FILE *p = popen(cmd, "r");
  if (p && fscanf(p, "%ld", &b->fds) != 1)
    b->fds = -1;
  if (p)
    pclose(p);
  socket_bytes(f, b);
  if (b->socks)
    qsort(b->socks, (size_t)b->conns, sizeof *b->socks, by_port);
}

static long
count_of(const fleetsim_counts *c, int which) {
  return which == FLEETSIM_CONN   ? c->conn
         : which == FLEETSIM_CONS ? c->cons
                                  : c->got;
}

int
fleetsim_wait(fleetsim *f, int which, long want, int limit_s, int poll_ms,
              fleetsim_counts *c, double *took) {
  double t0 = bench_now_s();
  for (;;) {
    fleetsim_poll(f, c);
    *took = bench_now_s() - t0;
    if (count_of(c, which) >= want)
      return 0;
    if (*took > limit_s)
      return -1;
    usleep((useconds_t)poll_ms * 1000);
  }
}

bus_conn *
fleetsim_admin(void) {
  return admin;
}

long
fleetsim_ready(fleetsim *f) {
  (void)f;
  return atomic_load(&nseen);
}

void
fleetsim_down(fleetsim *f) {
  fleetsim_nodes_stop(f);
  if (f->sched > 0) {
    bench_stop_service(f->sched, "lark-scheduler");
  }
  bus_conn_unserve(watch);
  bus_conn_close(admin);
  admin = NULL, watch = NULL;
  free((void *)seen);
  seen = NULL;
  lt_natsd_stop(&f->srv);
  live = NULL;
  if (!getenv("LARK_KEEP"))
    lt_rmtree(f->dir);
}
