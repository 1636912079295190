/*
 * edgebed.c - two lark-edge nodes beside lark-scheduler (see edgebed.h).
 */
#include "edgebed.h"

#include <criterion/criterion.h>
#include <stdio.h>

#include "cmd_check.h"
#include "natsd.h"

const char *const lt_edge_names[2] = {"edge-1", "edge-2"};

pid_t
lt_edge_start(const char *url, const char *dir, int i,
              const char *const extra[]) {
  const char *argv[24] = {"--cluster", "c1"};
  int n = 2;
  for (; extra && extra[n - 2]; n++) {
    cr_assert_lt(n, 21, "too many arguments for lark-edge");
    argv[n] = extra[n - 2];
  }
  argv[n] = NULL;
  return lt_must_start_edge(url, dir, lt_edge_names[i], 1, argv);
}

void
lt_two_edges_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
                const char *tag, const char *const extra[], pid_t pids[3]) {
  const char *nodes[] = {lt_edge_names[0], lt_edge_names[1], NULL};
  lt_tmpdir(dir, cap, tag);
  pids[2] = lt_edge_bed_up(srv, conn, dir, nodes);
  for (int i = 0; i < 2; i++)
    pids[i] = lt_edge_start(srv->url, dir, i, extra);
}

void
lt_sh_job(bus_conn *conn, const char *name, int replicas, int gpus, int retries,
          const char *strategy, const char *script) {
  json_t *spec = json_pack(
      "{s:s,s:s,s:{s:s},s:{s:[{s:s,s:s,s:i,s:i,s:{s:i,s:i,s:i},"
      "s:{s:{s:[s,s,s]}}}]}}",
      "apiVersion", "rlinf.io/v1alpha1", "kind", "Job", "metadata", "name",
      name, "spec", "tasks", "name", "a", "role", "Actor", "replicas", replicas,
      "maxRetries", retries, "resources", "cpu", 1, "memory", 64, "gpu", gpus,
      "runtime", "raw", "entrypoint", "sh", "-c", script);
  if (spec && strategy)
    json_object_set_new(json_object_get(spec, "spec"), "strategy",
                        json_string(strategy));
  lt_must_apply_resource(conn, "job", spec);
}

void
lt_job_verb(bus_conn *conn, const char *verb, const char *name) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  lt_must_command_json(conn, "job", verb, json_pack("{s:s}", "name", name), &z);
  msgpack_zone_destroy(&z);
}
