/*
 * bench/robot_cmd.c - from an operator's robot command to the robot's
 * launch process running, through a real broker, lark-scheduler,
 * lark-devices and lark-edge.
 *
 * Starts a nats-server, lark-scheduler and lark-devices, and two lark-edge
 * nodes, each with a device file of one robot, arm, whose launch line is
 * this benchmark itself in its child role (--launched FIFO: it writes the
 * monotonic clock to the FIFO, then waits; on SIGTERM it writes 0 and
 * ends). Each round times, in the same run:
 *
 *   command   robot.start on n1 through the command path (what `larkctl
 *             robot start n1/arm` sends): lark-devices decides,
 *             robot.desired reaches the node's stream, the node launches;
 *             until the launch wrote its clock; then robot.stop.
 *   desired   robot.desired Running appended straight to n2's stream (as
 *             lark-devices does), until the launch wrote its clock: the
 *             node's part alone; then Stopped.
 *   baseline  the bare fork/exec of the same program until it wrote.
 *
 * Each as p50/p99.
 *
 *   bench_robot_cmd [--rounds N]
 */
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench.h"

static int64_t
mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int child_fd = -1;

static void
on_term(int sig) {
  (void)sig;
  if (write(child_fd, "0\n", 2) < 0)
    _exit(1);
  _exit(0);
}

/* The child role: say when it runs, then wait for the stop, and say so. */
static int
launched(const char *fifo) {
  char line[32];
  int n = snprintf(line, sizeof line, "%lld\n", (long long)mono_ns());
  signal(SIGTERM, on_term);
  child_fd = open(fifo, O_WRONLY);
  if (child_fd < 0 || write(child_fd, line, (size_t)n) != n)
    return 1;
  for (;;)
    pause();
}

/* The clock a launch wrote on the FIFO (read end fd). */
static int64_t
read_clock(int fd) {
  char buf[64];
  size_t len = 0;
  while (len < sizeof buf - 1) {
    ssize_t n = read(fd, buf + len, 1);
    if (n <= 0)
      bench_die("read the fifo", "no launch wrote its clock");
    if (buf[len++] == '\n')
      break;
  }
  buf[len] = 0;
  return atoll(buf);
}

static int
cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void
report(const char *what, int64_t *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp64);
  printf("%-36s n=%d p50=%.2f ms p99=%.2f ms max=%.2f ms\n", what, n,
         (double)v[n / 2] / 1e6, (double)v[(n * 99) / 100] / 1e6,
         (double)v[n - 1] / 1e6);
}

/* A launch was stopped: its last word, then a moment for the node to
 * record the end before the next round starts it again. */
static void
stopped(int fd) {
  if (read_clock(fd) != 0)
    bench_die("read the fifo", "a clock where a stop was expected");
  usleep(20 * 1000);
}

/* The baseline: fork/exec of self --launched fifo until it wrote. */
static int64_t
bare_exec(const char *self, const char *fifo, int fd) {
  int64_t t0 = mono_ns();
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "--launched", fifo, (char *)NULL);
    _exit(127);
  }
  if (pid < 0)
    bench_die("fork", strerror(errno));
  int64_t t1 = read_clock(fd);
  kill(pid, SIGTERM);
  stopped(fd);
  waitpid(pid, NULL, 0);
  return t1 - t0;
}

/* robot.desired for n2's arm, as lark-devices writes it. */
static void
desire(bus_conn *c, const char *want, uint64_t version) {
  bus_ev_robot_desired d = {.robot = BUS_STR("arm"),
                            .has_version = 1,
                            .version = version,
                            .desired = bus_str_of(want)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_robot_desired_pack(&sb, &d))
    bench_die("pack robot.desired", bus_last_error());
  bus_event ev;
  char id[33];
  bench_event_init(&ev, id, "robot.desired", "lark-devices", &sb);
  if (bus_append(c, "lark.node.n2.robot.arm", &ev, 0, NULL, NULL))
    bench_die("append robot.desired", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

/* lark.cmd.admin.robot.<verb> {key, node: n1, robot: arm}; 0 when
 * accepted, -1 when refused (why into bus_last_error). */
static int
command(bus_conn *c, const char *verb, long round) {
  char subject[128], key[64];
  snprintf(subject, sizeof subject, "lark.cmd.admin.robot.%s", verb);
  snprintf(key, sizeof key, "bench-%s-%ld", verb, round);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "key", key);
  bus_pack_kv_str(&b.pk, "node", "n1");
  bus_pack_kv_str(&b.pk, "robot", "arm");
  void *reply = NULL;
  size_t len = 0;
  int rc =
      bus_conn_request(c, subject, b.sb.data, b.sb.size, 10000, &reply, &len);
  if (!rc && len > 8 && memmem(reply, len, "error", 5))
    rc = bus_error(BUS_EINVAL, "%.*s", (int)(len < 300 ? len : 300),
                   (const char *)reply);
  free(reply);
  bus_packbuf_destroy(&b);
  return rc ? -1 : 0;
}

/* lark-edge --node node with a device file of robot arm launching self. */
static pid_t
start_edge(const char *self, const char *url, const char *dir,
           const char *node) {
  char bin[4200], data[600], file[600], log[600], copy[4096];
  snprintf(copy, sizeof copy, "%s", self);
  snprintf(bin, sizeof bin, "%s/lark-edge", dirname(copy));
  snprintf(data, sizeof data, "%s/%s", dir, node);
  snprintf(file, sizeof file, "%s/%s.yaml", dir, node);
  snprintf(log, sizeof log, "%s/%s.log", dir, node);
  FILE *f = fopen(file, "w");
  if (!f)
    bench_die("write the device file", strerror(errno));
  fprintf(f,
          "robots:\n  - name: arm\n    kind: ros2\n"
          "    launch: [%s, --launched, %s/fifo]\n",
          self, dir);
  fclose(f);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(bin, bin, "--url", url, "--node", node, "--data", data,
          "--device-file", file, "--grace", "2", (char *)NULL);
    _exit(127);
  }
  return pid;
}

typedef struct bench_run {
  const char *self;
  char dir[256], fifo[300];
  int fd;
  bus_conn *c;
  pid_t pids[4];
} bench_run;

static void
up(bench_run *r, lt_natsd *srv) {
  char sub[300];
  lt_tmpdir(r->dir, sizeof r->dir, "benchrobot");
  bench_natsd_start(srv, r->dir, 0, NULL);
  r->c = bench_connect_streams(srv->url, 0);
  snprintf(r->fifo, sizeof r->fifo, "%s/fifo", r->dir);
  if (mkfifo(r->fifo, 0600) < 0)
    bench_die("mkfifo", strerror(errno));
  r->fd = open(r->fifo, O_RDWR); /* never EOF between launches */
  const char *svc[] = {"lark-scheduler", "lark-devices"};
  for (int i = 0; i < 2; i++) {
    snprintf(sub, sizeof sub, "%s/%s", r->dir, svc[i]);
    mkdir(sub, 0700);
    r->pids[i] = bench_start_service(r->self, svc[i], srv->url, sub);
  }
  r->pids[2] = start_edge(r->self, srv->url, r->dir, "n1");
  r->pids[3] = start_edge(r->self, srv->url, r->dir, "n2");
  /* the first start, once n1's robot is known: everything is up */
  int ok = 0;
  for (int i = 0; i < 300 && !(ok = !command(r->c, "start", -1)); i++)
    usleep(100 * 1000);
  if (!ok)
    bench_die("robot.start n1/arm", bus_last_error());
  read_clock(r->fd);
  if (command(r->c, "stop", -1))
    bench_die("robot.stop n1/arm", bus_last_error());
  stopped(r->fd);
  if (bus_node_stream_ensure(r->c, "n2", NULL))
    bench_die("node stream", bus_last_error());
}

static void
down(bench_run *r, lt_natsd *srv) {
  for (int i = 3; i >= 0; i--)
    if (r->pids[i] > 0) {
      kill(r->pids[i], SIGTERM);
      waitpid(r->pids[i], NULL, 0);
    }
  bus_conn_close(r->c);
  close(r->fd);
  lt_natsd_stop(srv);
  lt_rmtree(r->dir);
}

int
main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--launched"))
    return launched(argv[2]);
  int rounds = 200;
  const bench_opt opts[] = {{"--rounds", &rounds, NULL, NULL}, {NULL}};
  if (bench_opts(argc, argv, opts) || rounds < 2)
    bench_die("usage", "bench_robot_cmd [--rounds N]");
  char self[4096];
  ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sn <= 0)
    bench_die("readlink", "/proc/self/exe");
  self[sn] = 0;
  bench_run r = {.self = self};
  lt_natsd srv;
  up(&r, &srv);
  int64_t *cmd = calloc((size_t)rounds * 3, sizeof *cmd);
  int64_t *des = cmd + rounds, *bare = cmd + 2 * rounds;
  uint64_t version = 0;
  for (int i = 0; i < rounds; i++) {
    bare[i] = bare_exec(self, r.fifo, r.fd);
    int64_t t0 = mono_ns();
    if (command(r.c, "start", i))
      bench_die("robot.start", bus_last_error());
    cmd[i] = read_clock(r.fd) - t0;
    if (command(r.c, "stop", i))
      bench_die("robot.stop", bus_last_error());
    stopped(r.fd);
    t0 = mono_ns();
    desire(r.c, "Running", ++version);
    des[i] = read_clock(r.fd) - t0;
    desire(r.c, "Stopped", ++version);
    stopped(r.fd);
  }
  printf("robot_cmd: %d rounds of each\n", rounds);
  report("robot.start -> launch running", cmd, rounds);
  report("robot.desired -> launch running", des, rounds);
  report("baseline: bare fork/exec", bare, rounds);
  free(cmd);
  down(&r, &srv);
  return 0;
}
