/*
 * bench.h - what every benchmark shares: a monotonic clock, a fatal
 * error line naming the benchmark, packing a string pair and a manifest's
 * head, and starting a service that sits next to the benchmark.
 */
#ifndef LARK_BENCH_H
#define LARK_BENCH_H

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

static inline double
bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Print "<benchmark>: what: detail" and exit 1. */
static inline void
bench_die(const char *what, const char *detail) {
  fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, detail);
  exit(1);
}

static inline void
bench_kv(msgpack_packer *pk, const char *k, const char *v) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_str_with_body(pk, v, strlen(v));
}

/* {apiVersion, kind, metadata: {name}, spec: } — the spec comes next. */
static inline void
bench_resource_head(msgpack_packer *pk, const char *kind, const char *name) {
  msgpack_pack_map(pk, 4);
  bench_kv(pk, "apiVersion", "rlinf.io/v1alpha1");
  bench_kv(pk, "kind", kind);
  msgpack_pack_str_with_body(pk, "metadata", 8);
  msgpack_pack_map(pk, 1);
  bench_kv(pk, "name", name);
  msgpack_pack_str_with_body(pk, "spec", 4);
}

/*
 * Start service binary name from the benchmark's own folder (argv0's)
 * with --url url --data <dir>/view, its stderr into <dir>/<name>.log.
 * Returns its pid (-1 when fork failed).
 */
static inline pid_t
bench_start_service(const char *argv0, const char *name, const char *url,
                    const char *dir) {
  char self[4096], bin[4200], data[512], log[512];
  snprintf(self, sizeof self, "%s", argv0);
  snprintf(bin, sizeof bin, "%s/%s", dirname(self), name);
  snprintf(data, sizeof data, "%s/view", dir);
  snprintf(log, sizeof log, "%s/%s.log", dir, name);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log, "w", stderr))
      _exit(126);
    execl(bin, bin, "--url", url, "--data", data, (char *)NULL);
    _exit(127);
  }
  return pid;
}

#endif
