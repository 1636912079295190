/*
 * bench.h - what every benchmark shares: a monotonic clock, a fatal
 * error line naming the benchmark, packing a string pair and a manifest's
 * head, applying Nodes and Jobs through the command path, starting a
 * service that sits next to the benchmark, a sample event of a chosen
 * size, and the rate the NATS CLI's own benchmark reports.
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

#include "bus.h"

static inline double
bench_now_s(void) {
  return (double)bus_mono_ns() / 1e9;
}

/* Print "<benchmark>: what: detail" and exit 1. */
static inline void
bench_die(const char *what, const char *detail) {
  fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, detail);
  exit(1);
}

/* Event data {text: "xxx..."} with text_len (at most 4096) x's. */
static inline void
bench_sample_data(msgpack_sbuffer *data, size_t text_len) {
  char text[4096];
  size_t n = text_len < sizeof text ? text_len : sizeof text;
  msgpack_packer pk;
  memset(text, 'x', n);
  msgpack_sbuffer_clear(data);
  msgpack_packer_init(&pk, data, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "text", 4);
  msgpack_pack_str_with_body(&pk, text, n);
}

/* A sample.created event with a fresh id (into id) around that data. */
static inline void
bench_sample_event(bus_event *ev, msgpack_sbuffer *data, char id[33],
                   size_t text_len) {
  bench_sample_data(data, text_len);
  memset(ev, 0, sizeof *ev);
  bus_event_new_id(id);
  ev->v = BUS_SCHEMA_VERSION;
  ev->type = "sample.created";
  ev->id = id;
  ev->ts = 1700000000000000000;
  ev->actor = "bench";
  ev->cause = "";
  ev->data_mp = data->data;
  ev->data_mp_len = data->size;
}

/* Run a `nats bench ...` command line; msgs/s from its "stats:" line, 0
 * when the CLI is missing or says nothing usable. */
static inline double
bench_nats_cli_rate(const char *cmd) {
  char line[1024];
  double rate = 0;
  FILE *p = popen(cmd, "r");
  if (!p)
    return 0;
  while (fgets(line, sizeof line, p)) {
    char *s = strstr(line, "stats: ");
    if (!s)
      continue;
    char digits[32];
    size_t k = 0;
    for (s += 7; *s && *s != ' ' && k + 1 < sizeof digits; s++)
      if (*s != ',')
        digits[k++] = *s;
    digits[k] = 0;
    rate = strtod(digits, NULL);
  }
  pclose(p);
  return rate;
}

/* {apiVersion, kind, metadata: {name}, spec: } — the spec comes next. */
static inline void
bench_resource_head(msgpack_packer *pk, const char *kind, const char *name) {
  msgpack_pack_map(pk, 4);
  bus_pack_kv_str(pk, "apiVersion", "rlinf.io/v1alpha1");
  bus_pack_kv_str(pk, "kind", kind);
  msgpack_pack_str_with_body(pk, "metadata", 8);
  msgpack_pack_map(pk, 1);
  bus_pack_kv_str(pk, "name", name);
  msgpack_pack_str_with_body(pk, "spec", 4);
}

/* {key: name, resource: {apiVersion, kind, metadata: {name}, spec: — the
 * body of an apply command whose spec comes next. */
static inline void
bench_apply_head(msgpack_packer *pk, const char *kind, const char *name) {
  msgpack_pack_map(pk, 2);
  bus_pack_kv_str(pk, "key", name);
  msgpack_pack_str_with_body(pk, "resource", 8);
  bench_resource_head(pk, kind, name);
}

/* runtime: {raw: {entrypoint: ["true"]}} */
static inline void
bench_runtime_true(msgpack_packer *pk) {
  msgpack_pack_str_with_body(pk, "runtime", 7);
  msgpack_pack_map(pk, 1);
  msgpack_pack_str_with_body(pk, "raw", 3);
  msgpack_pack_map(pk, 1);
  msgpack_pack_str_with_body(pk, "entrypoint", 10);
  msgpack_pack_array(pk, 1);
  msgpack_pack_str_with_body(pk, "true", 4);
}

/* A command request that must succeed (the benchmark dies otherwise). */
static inline void
bench_call(bus_conn *c, const char *subject, const msgpack_sbuffer *sb) {
  void *reply = NULL;
  size_t len = 0;
  int rc =
      bus_conn_request(c, subject, sb->data, sb->size, 10000, &reply, &len);
  if (rc)
    bench_die(subject, bus_last_error());
  if (len > 8 && memmem(reply, len, "error", 5))
    bench_die(subject, "refused");
  free(reply);
}

/* Apply Node name (cluster c1, 64 CPUs, 256 GiB) through the scheduler. */
static inline void
bench_add_node(bus_conn *c, const char *name) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  bench_apply_head(&pk, "Node", name);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "cluster", "c1");
  msgpack_pack_str_with_body(&pk, "capacity", 8);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "cpu", 3);
  msgpack_pack_uint32(&pk, 64);
  msgpack_pack_str_with_body(&pk, "memory", 6);
  msgpack_pack_uint32(&pk, 262144);
  bench_call(c, "lark.cmd.admin.node.apply", &sb);
  msgpack_sbuffer_destroy(&sb);
}

/* Apply Job name: one Rollout task of pods replicas (1 CPU, 256 MiB,
 * runs `true`) with strategy spread or pack. */
static inline void
bench_add_job(bus_conn *c, const char *name, int pods, const char *strategy) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  bench_apply_head(&pk, "Job", name);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "strategy", strategy);
  msgpack_pack_str_with_body(&pk, "tasks", 5);
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 5);
  bus_pack_kv_str(&pk, "name", "w");
  bus_pack_kv_str(&pk, "role", "Rollout");
  msgpack_pack_str_with_body(&pk, "replicas", 8);
  msgpack_pack_uint32(&pk, (uint32_t)pods);
  msgpack_pack_str_with_body(&pk, "resources", 9);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "cpu", 3);
  msgpack_pack_uint32(&pk, 1);
  msgpack_pack_str_with_body(&pk, "memory", 6);
  msgpack_pack_uint32(&pk, 256);
  bench_runtime_true(&pk);
  bench_call(c, "lark.cmd.admin.job.apply", &sb);
  msgpack_sbuffer_destroy(&sb);
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
