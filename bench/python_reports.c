/*
 * python_reports.c - run reports per second from one Python process through
 * the larkbus module (libbus/python: its own NATS connection, many
 * publishes in flight, flush once every ack is in), beside the baseline of
 * the same run: `larkctl emit`, one process per report, as the module ran
 * it before. Both publish to LARK_REPORTS on the same broker and are
 * counted there once stored.
 *
 *   bench_python_reports [--reports N] [--larkctl M]
 *
 * Needs LARK_BIN_DIR (larkctl) and LARK_SOURCE_DIR (the module), which
 * ctest sets.
 */
#include <sys/wait.h>

#include "bench.h"
#include "natsd.h"
#include "proc.h"

static uint64_t
stored(bus_conn *c) {
  uint64_t seq = 0;
  if (bus_stream_last_seq(c, "LARK_REPORTS", &seq))
    bench_die("LARK_REPORTS", bus_last_error());
  return seq;
}

int
main(int argc, char **argv) {
  int n = 50000, m = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--reports"))
      n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--larkctl"))
      m = atoi(argv[i + 1]);
  }
  const char *src = getenv("LARK_SOURCE_DIR");
  char larkctl[512], pypath[512], script[512], code[1024], out[4096], err[4096];
  if (!lt_bin("larkctl", larkctl, sizeof larkctl))
    bench_die("larkctl", "set LARK_BIN_DIR");
  snprintf(pypath, sizeof pypath, "%s/libbus/python", src ? src : ".");
  lt_natsd srv;
  bus_conn *c;
  if (lt_natsd_start(&srv, NULL, NULL) || lt_connect(&srv, &c))
    bench_die("broker", "cannot start nats-server");
  if (lt_streams(c, 120000))
    bench_die("streams", bus_last_error());
  setenv("LARK_URL", srv.url, 1);
  setenv("PYTHONPATH", pypath, 1);
  unsetenv("LARK_SOCKET");
  unsetenv("LARK_CREDS");
  unsetenv("LARK_DATA");

  /* the module: emit n reports, then flush until every ack is in */
  snprintf(script, sizeof script, "%s/bench.py", srv.dir);
  snprintf(code, sizeof code,
           "import time, larkbus\n"
           "t0 = time.monotonic()\n"
           "for i in range(%d):\n"
           "    larkbus.emit('metric', job='bench', step=i, loss=0.25)\n"
           "larkbus.flush(120)\n"
           "print('%%.6f' %% (time.monotonic() - t0))\n",
           n);
  FILE *f = fopen(script, "w");
  if (!f)
    bench_die(script, strerror(errno));
  fputs(code, f);
  fclose(f);
  char *py[] = {(char *)"/usr/bin/env", (char *)"python3", script, NULL};
  uint64_t before = stored(c);
  double t0 = bench_now_s();
  if (lt_run(py, out, sizeof out, err, sizeof err) != 0)
    bench_die("python3", err);
  double wall = bench_now_s() - t0, inside = atof(out);
  uint64_t got = stored(c) - before;
  if (got != (uint64_t)n) {
    char msg[128];
    snprintf(msg, sizeof msg, "%llu stored of %d", (unsigned long long)got, n);
    bench_die("module", msg);
  }

  /* the baseline: larkctl emit, a process per report, one after another */
  before = stored(c);
  t0 = bench_now_s();
  for (int i = 0; i < m; i++) {
    char data[64];
    snprintf(data, sizeof data, "{\"step\":%d,\"loss\":0.25}", i);
    char *ctl[] = {larkctl,
                   (char *)"emit",
                   (char *)"bench",
                   (char *)"metric",
                   (char *)"--data",
                   data,
                   NULL};
    if (lt_run(ctl, out, sizeof out, err, sizeof err) != 0)
      bench_die("larkctl emit", err);
  }
  double ctl_s = bench_now_s() - t0;
  got = stored(c) - before;
  if (got != (uint64_t)m)
    bench_die("larkctl emit", "not every report was stored");

  printf("python module:  %d reports in %.3f s: %.0f reports/s "
         "(%.0f/s counting interpreter start, %.3f s)\n",
         n, inside, n / inside, n / wall, wall);
  printf("larkctl emit:   %d reports in %.3f s: %.0f reports/s "
         "(a process each)\n",
         m, ctl_s, m / ctl_s);
  printf("ratio:          %.1fx\n", (n / inside) / (m / ctl_s));
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  return 0;
}
