/*
 * gateway_get_http.c - bench_gateway_get's HTTP half: GET of every pod
 * from a real lark-gateway, beside the same bytes served as one static
 * body by the same server library (libmicrohttpd, a thread per
 * connection, as the gateway runs it) in this process.
 *
 * A nats-server is started and the same events appended to LARK_EVENTS
 * (as lark-scheduler writes them); lark-gateway (from the benchmark's own
 * folder) follows them into its view; once /readyz says it has caught up
 * and the list holds every pod, each GET is timed from connect to the
 * last byte, over a fresh connection (Connection: close), as a browser's
 * first load would be.
 */
#include <arpa/inet.h>
#include <libgen.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "bench.h"
#include "gateway_get.h"

/* GET path from 127.0.0.1:port with token (may be NULL) into body: the
 * status, or -1. */
static int
http_get(int port, const char *path, const char *token, gw_buf *body) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  char req[1024];
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s"
                   "Connection: close\r\n\r\n",
                   path, token ? "Authorization: Bearer " : "",
                   token ? token : "", token ? "\r\n" : "");
  if (write(fd, req, (size_t)n) != n) {
    close(fd);
    return -1;
  }
  gw_buf_reset(body);
  char chunk[65536];
  ssize_t got;
  while ((got = read(fd, chunk, sizeof chunk)) > 0)
    if (gw_buf_add(body, chunk, (size_t)got))
      break;
  close(fd);
  int status = -1;
  if (body->len > 12)
    sscanf(body->p, "HTTP/1.%*d %d", &status);
  return status;
}

/* The body after the head (chunked bodies keep their framing: only their
 * length and content are compared, both servers' alike). */
static const char *
body_of(const gw_buf *b) {
  const char *p = b->p ? strstr(b->p, "\r\n\r\n") : NULL;
  return p ? p + 4 : "";
}

static pid_t
start_gateway(const char *argv0, const char *url, const char *dir) {
  char self[4096], bin[4200], data[512], log[512], tok[512], port[512];
  snprintf(self, sizeof self, "%s", argv0);
  snprintf(bin, sizeof bin, "%s/lark-gateway", dirname(self));
  snprintf(data, sizeof data, "%s/view", dir);
  snprintf(log, sizeof log, "%s/lark-gateway.log", dir);
  snprintf(tok, sizeof tok, "%s/token", dir);
  snprintf(port, sizeof port, "%s/port", dir);
  FILE *f = fopen(tok, "w");
  if (!f || fputs("bench-token-0123456789\n", f) < 0 || fclose(f) ||
      chmod(tok, 0600))
    bench_die("token file", tok);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log, "w", stderr))
      _exit(126);
    execl(bin, bin, "--url", url, "--data", data, "--http", "127.0.0.1:0",
          "--token-file", tok, "--port-file", port, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* The port lark-gateway wrote, waiting up to 15 s. */
static int
gateway_port(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/port", dir);
  for (int i = 0; i < 150; i++) {
    FILE *f = fopen(path, "r");
    int port = 0;
    if (f) {
      if (fscanf(f, "http %d", &port) != 1)
        port = 0;
      fclose(f);
    }
    if (port > 0)
      return port;
    usleep(100000);
  }
  snprintf(path, sizeof path, "%s/lark-gateway.log", dir);
  bench_die("lark-gateway: no port file within 15 s; its log", path);
}

static enum MHD_Result
serve_static(void *cls, struct MHD_Connection *c, const char *url,
             const char *method, const char *version, const char *upload,
             size_t *upload_len, void **con_cls) {
  (void)url, (void)method, (void)version, (void)upload, (void)upload_len;
  (void)con_cls;
  const gw_buf *b = cls;
  struct MHD_Response *r =
      MHD_create_response_from_buffer(b->len, b->p, MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ok = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ok;
}

/* rounds GETs of path: p50 and p99 seconds into p[0], p[1]. */
static void
time_gets(int port, const char *path, const char *token, int rounds,
          size_t want_len, double p[2]) {
  double *t = calloc((size_t)rounds, sizeof *t);
  gw_buf b = {0};
  for (int r = 0; r < rounds; r++) {
    double t0 = bench_now_s();
    int status = http_get(port, path, token, &b);
    t[r] = bench_now_s() - t0;
    if (status != 200 || strlen(body_of(&b)) < want_len)
      bench_die("GET", b.p ? b.p : "no answer");
  }
  p[0] = bench_pct(t, rounds, 0.5);
  p[1] = bench_pct(t, rounds, 0.99);
  gw_buf_free(&b);
  free(t);
}

void
bench_gateway_http(const char *argv0, int jobs, int pods, int rounds) {
  lt_natsd srv;
  char dir[256];
  const char *path = "/api/v1/rlinf.io/v1alpha1/pods";
  lt_tmpdir(dir, sizeof dir, "bench-gateway-http");
  bench_natsd_start(&srv, dir, 0, NULL);
  bus_conn *c = bench_connect_streams(srv.url, 120000);
  bench_gw_events(jobs, pods, bench_gw_append, c);
  pid_t gw = start_gateway(argv0, srv.url, dir);
  int port = gateway_port(dir);
  gw_buf b = {0};
  size_t want = (size_t)jobs * (size_t)pods, listed = 0;
  for (int i = 0; i < 600 && listed != want; i++) { /* caught up: 60 s */
    if (http_get(port, path, "bench-token-0123456789", &b) == 200)
      listed = bench_gw_items(body_of(&b));
    if (listed != want)
      usleep(100000);
  }
  if (listed != want)
    bench_die("lark-gateway: did not list every pod within 60 s", dir);
  size_t len = strlen(body_of(&b));
  gw_buf same = {0};
  gw_buf_add(&same, body_of(&b), len);
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
      NULL, serve_static, &same, MHD_OPTION_END);
  const union MHD_DaemonInfo *di =
      d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
  if (!di)
    bench_die("libmicrohttpd", "cannot serve the baseline");
  double g[2], s[2];
  time_gets(port, path, "bench-token-0123456789", rounds, len, g);
  time_gets(di->port, path, NULL, rounds, len, s);
  printf("  GET %zu pods over HTTP (%.1f MB): p50 %.2f ms p99 %.2f ms | the "
         "same bytes as one static body: p50 %.2f ms p99 %.2f ms\n",
         want, (double)len / 1e6, g[0] * 1e3, g[1] * 1e3, s[0] * 1e3,
         s[1] * 1e3);
  MHD_stop_daemon(d);
  bench_stop_service(gw, "lark-gateway");
  gw_buf_free(&b);
  gw_buf_free(&same);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
}
