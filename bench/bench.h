/*
 * bench.h - what every benchmark shares: a monotonic clock, a fatal
 * error line naming the benchmark, and packing a string pair.
 */
#ifndef LARK_BENCH_H
#define LARK_BENCH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

#endif
