/*
 * camera_frames.c - 640x480 JPEG frames to a pod through lark-edge's
 * camera socket, beside the baseline of the same run: the same frame's
 * bytes through a plain Unix socket (a thread that answers each request
 * with the header line and the bytes it holds, encoding nothing).
 *
 * A real lark-edge with a `pattern` camera (fps 0: as fast as asked) and
 * a pod bound to it, whose process is this benchmark again (--client): the
 * node tells callers by their process, so only a pod may take frames.
 * The pod measures, for each socket:
 *
 *   one by one   {"op":"capture","count":1}, then the frame read whole:
 *                frames/s, and p50/p99 of request -> frame fully read
 *   streamed     one {"op":"capture","count":N}: frames/s
 *
 *   bench_camera_frames [--frames N] [--width 640] [--height 480]
 *
 * Needs LARK_BIN_DIR (lark-edge), which ctest sets.
 */
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "bench.h"
#include "natsd.h"
#include "proc.h"

#define NODE "bench-cam"

typedef struct figures {
  double one_fps, p50_ms, p99_ms, stream_fps;
} figures;

/* ------------------------------------------------------------ the pod */

static struct sockaddr_un
addr_of(const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  size_t n = strlen(path);
  if (n >= sizeof a.sun_path)
    bench_die(path, "too long for a socket's path");
  memcpy(a.sun_path, path, n + 1);
  return a;
}

static int
dial(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = addr_of(path);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a))
    bench_die(path, strerror(errno));
  return fd;
}

static void
put(int fd, const char *s) {
  size_t n = strlen(s);
  if (write(fd, s, n) != (ssize_t)n)
    bench_die("write", strerror(errno));
}

/* Read one header line and its frame whole (into buf); its size. */
static size_t
read_frame(int fd, char *buf, size_t cap) {
  char line[512];
  size_t n = 0;
  while (n < sizeof line - 1) {
    if (read(fd, line + n, 1) != 1)
      bench_die("read", "the socket closed");
    if (line[n++] == '\n')
      break;
  }
  line[n] = 0;
  const char *s = strstr(line, "\"size\":");
  if (!s)
    bench_die("not a frame", line);
  size_t size = strtoul(s + 7, NULL, 10), got = 0;
  if (size > cap)
    bench_die("frame", "too big");
  while (got < size) {
    ssize_t r = read(fd, buf + got, size - got);
    if (r <= 0)
      bench_die("read", "the socket closed mid-frame");
    got += (size_t)r;
  }
  return size;
}

static int
cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* n frames one by one, then n streamed, from the socket at path. */
static figures
measure(const char *path, int n, char *buf, size_t cap, size_t *size) {
  figures f = {0};
  double *lat = calloc((size_t)n, sizeof *lat);
  int fd = dial(path);
  const char *one = "{\"op\":\"capture\",\"camera\":\"cam\",\"count\":1}\n";
  read_frame((put(fd, one), fd), buf, cap); /* warm: source opened */
  double t0 = bench_now_s();
  for (int i = 0; i < n; i++) {
    double s = bench_now_s();
    put(fd, one);
    *size = read_frame(fd, buf, cap);
    lat[i] = (bench_now_s() - s) * 1e3;
  }
  f.one_fps = n / (bench_now_s() - t0);
  qsort(lat, (size_t)n, sizeof *lat, cmp_double);
  f.p50_ms = lat[n / 2];
  f.p99_ms = lat[(size_t)n * 99 / 100];
  char req[128];
  snprintf(req, sizeof req,
           "{\"op\":\"capture\",\"camera\":\"cam\",\"count\":%d}\n", n);
  t0 = bench_now_s();
  put(fd, req);
  for (int i = 0; i < n; i++)
    read_frame(fd, buf, cap);
  f.stream_fps = n / (bench_now_s() - t0);
  close(fd);
  free(lat);
  return f;
}

typedef struct plain {
  int lfd;
  const char *frame;
  size_t len;
} plain;

/* The baseline's server: each request line answered with a header and
 * the frame's bytes, count times. */
static void *
plain_serve(void *arg) {
  plain *p = arg;
  int fd = accept(p->lfd, NULL, NULL);
  char line[512], hdr[256];
  size_t n = 0;
  int hl = snprintf(hdr, sizeof hdr,
                    "{\"ok\":true,\"frame\":{\"seq\":0,\"ts\":0,\"width\":640,"
                    "\"height\":480,\"format\":\"jpeg\",\"size\":%zu}}\n",
                    p->len);
  while (fd >= 0 && read(fd, line + n, 1) == 1) {
    if (line[n] != '\n' && n < sizeof line - 2) {
      n++;
      continue;
    }
    line[n + 1] = 0;
    n = 0;
    const char *c = strstr(line, "\"count\":");
    long count = c ? strtol(c + 8, NULL, 10) : 1;
    for (long i = 0; i < count; i++) {
      struct iovec v[2] = {{hdr, (size_t)hl}, {(void *)p->frame, p->len}};
      if (writev(fd, v, 2) < 0)
        return NULL;
    }
  }
  if (fd >= 0)
    close(fd);
  return NULL;
}

static figures
baseline(const char *dir, int n, const char *frame, size_t len, char *buf,
         size_t cap) {
  char path[600];
  snprintf(path, sizeof path, "%s/plain.sock", dir);
  unlink(path);
  plain p = {socket(AF_UNIX, SOCK_STREAM, 0), frame, len};
  struct sockaddr_un a = addr_of(path);
  if (bind(p.lfd, (struct sockaddr *)&a, sizeof a) || listen(p.lfd, 1))
    bench_die(path, strerror(errno));
  pthread_t th;
  pthread_create(&th, NULL, plain_serve, &p);
  size_t size;
  figures f = measure(path, n, buf, cap, &size);
  pthread_join(th, NULL);
  close(p.lfd);
  return f;
}

/* The pod: both sockets measured, the figures into out. */
static int
client(char **argv) {
  const char *sock = argv[2], *out = argv[4], *dir = argv[5];
  int n = atoi(argv[3]);
  size_t cap = 8 << 20, size = 0;
  char *buf = malloc(cap), *frame = malloc(cap);
  figures cam = measure(sock, n, buf, cap, &size);
  memcpy(frame, buf, size);
  figures base = baseline(dir, n, frame, size, buf, cap);
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp", out);
  FILE *f = fopen(tmp, "w");
  fprintf(f, "%zu %f %f %f %f %f %f %f %f\n", size, cam.one_fps, cam.p50_ms,
          cam.p99_ms, cam.stream_fps, base.one_fps, base.p50_ms, base.p99_ms,
          base.stream_fps);
  fclose(f);
  rename(tmp, out);
  return 0;
}

/* ----------------------------------------------------------- the bench */

static void
desire(bus_conn *c, const char *const argv[], int argc) {
  bus_str args[8], held[1] = {BUS_STR("camera/cam")};
  for (int i = 0; i < argc && i < 8; i++)
    args[i] = bus_str_of(argv[i]);
  bus_ev_pod_desired d = {
      .pod = BUS_STR("cam-pod"),
      .job = BUS_STR("cam"),
      .task = BUS_STR("cam-a"),
      .desired = BUS_STR("Running"),
      .has_attempt = true,
      .has_runtime = true,
      .runtime = BUS_STR("raw"),
      .has_raw = true,
      .raw = {.has_entrypoint = true,
              .entrypoint = {args, (uint32_t)(argc < 8 ? argc : 8)}},
      .has_boundDevices = true,
      .boundDevices = {held, 1},
  };
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_pod_desired_pack(&sb, &d))
    bench_die("pod.desired", bus_last_error());
  bus_event ev;
  char id[33];
  bench_event_init(&ev, id, "pod.desired", "bench", &sb);
  if (bus_append(c, "lark.node." NODE ".pod.cam-pod", &ev, BUS_APPEND_NOCHECK,
                 NULL, NULL))
    bench_die("pod.desired", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

static void
report(const char *what, const figures *f) {
  printf("%-24s one by one %7.0f frames/s  p50 %6.3f ms  p99 %6.3f ms   "
         "streamed %7.0f frames/s\n",
         what, f->one_fps, f->p50_ms, f->p99_ms, f->stream_fps);
}

int
main(int argc, char **argv) {
  if (argc == 6 && !strcmp(argv[1], "--client"))
    return client(argv);
  int n = 2000, w = 640, h = 480;
  const bench_opt opts[] = {{"--frames", .i = &n},
                            {"--width", .i = &w},
                            {"--height", .i = &h},
                            {NULL}};
  bench_opts(argc, argv, opts);
  lt_natsd srv;
  bus_conn *c;
  if (lt_natsd_start(&srv, NULL, NULL) || lt_connect(&srv, &c))
    bench_die("broker", "cannot start nats-server");
  if (lt_streams(c, 2000) || bus_node_stream_ensure(c, NODE, NULL))
    bench_die("streams", bus_last_error());
  char devs[512], data[512], log[512], sock[600], out[512], self[512], nstr[16];
  snprintf(devs, sizeof devs, "%s/devices.yaml", srv.dir);
  FILE *f = fopen(devs, "w");
  fprintf(f,
          "cameras:\n  - name: cam\n    source: pattern\n    width: %d\n"
          "    height: %d\n    fps: 0\n",
          w, h);
  fclose(f);
  snprintf(data, sizeof data, "%s/edge", srv.dir);
  snprintf(log, sizeof log, "%s/edge.log", srv.dir);
  snprintf(sock, sizeof sock, "%s/run/camera-ctrl.sock", data);
  snprintf(out, sizeof out, "%s/figures", srv.dir);
  snprintf(nstr, sizeof nstr, "%d", n);
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  self[sl > 0 ? sl : 0] = 0;
  const char *extra[] = {"--node", NODE, "--device-file", devs, NULL};
  pid_t edge = lt_start_service("lark-edge", srv.url, data, log, extra);
  if (edge < 0)
    bench_die("lark-edge", "does not start");
  const char *pod[] = {self, "--client", sock, nstr, out, srv.dir};
  desire(c, pod, 6);
  figures cam = {0}, base = {0};
  size_t size = 0;
  for (int i = 0; i < 6000 && !size; i++) {
    FILE *r = fopen(out, "r");
    if (r &&
        fscanf(r, "%zu %lf %lf %lf %lf %lf %lf %lf %lf", &size, &cam.one_fps,
               &cam.p50_ms, &cam.p99_ms, &cam.stream_fps, &base.one_fps,
               &base.p50_ms, &base.p99_ms, &base.stream_fps) != 9)
      size = 0;
    if (r)
      fclose(r);
    if (!size)
      usleep(50000);
  }
  lt_kill(edge, SIGTERM);
  if (!size)
    bench_die("pod", "no figures from the pod (see its edge.log)");
  printf("%dx%d pattern frames, %zu bytes of JPEG each, %d frames a run\n", w,
         h, size, n);
  report("lark-edge camera socket", &cam);
  report("plain Unix socket", &base);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  return 0;
}
