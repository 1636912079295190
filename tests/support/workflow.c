/*
 * workflow.c - Workflow resources from a one-line spec.
 */
#include "workflow.h"

#include <stdio.h>
#include <string.h>

#include "bus.h"

/* One template's JobSpec: one task running `true`. */
static void
pack_jobspec(msgpack_packer *pk, int replicas) {
  msgpack_pack_map(pk, 1);
  bus_pack_str(pk, "tasks");
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, 4);
  bus_pack_kv_str(pk, "name", "main");
  bus_pack_kv_str(pk, "role", "Actor");
  bus_pack_kv_uint(pk, "replicas", (uint32_t)replicas);
  bus_pack_str(pk, "runtime");
  msgpack_pack_map(pk, 1);
  bus_pack_str(pk, "raw");
  msgpack_pack_map(pk, 1);
  bus_pack_str(pk, "entrypoint");
  msgpack_pack_array(pk, 1);
  bus_pack_str(pk, "true");
}

/* Template item ("b: a c", cut out of the spec and written on) as
 * {name, dependencies, spec}. */
static void
pack_template(msgpack_packer *pk, char *item, int replicas) {
  char *colon = strchr(item, ':'), *deps[64], *save = NULL;
  int nd = 0;
  if (colon) {
    *colon = 0;
    for (char *d = strtok_r(colon + 1, " ", &save); d && nd < 64;
         d = strtok_r(NULL, " ", &save))
      deps[nd++] = d;
  }
  while (*item == ' ')
    item++;
  for (char *end = item + strlen(item); end > item && end[-1] == ' ';)
    *--end = 0;
  msgpack_pack_map(pk, 3);
  bus_pack_kv_str(pk, "name", item);
  bus_pack_str(pk, "dependencies");
  msgpack_pack_array(pk, (uint32_t)nd);
  for (int k = 0; k < nd; k++)
    bus_pack_str(pk, deps[k]);
  bus_pack_str(pk, "spec");
  pack_jobspec(pk, replicas);
}

void
lt_pack_workflow(msgpack_packer *pk, const char *name, const char *dagspec,
                 int replicas) {
  char buf[2048], *save = NULL, *items[128];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", dagspec);
  for (char *it = strtok_r(buf, ";", &save); it && n < 128;
       it = strtok_r(NULL, ";", &save))
    items[n++] = it;
  msgpack_pack_map(pk, 4);
  bus_pack_kv_str(pk, "apiVersion", "rlinf.io/v1alpha1");
  bus_pack_kv_str(pk, "kind", "Workflow");
  bus_pack_str(pk, "metadata");
  msgpack_pack_map(pk, 1);
  bus_pack_kv_str(pk, "name", name);
  bus_pack_str(pk, "spec");
  msgpack_pack_map(pk, 1);
  bus_pack_str(pk, "jobTemplates");
  msgpack_pack_array(pk, (uint32_t)n);
  for (int i = 0; i < n; i++)
    pack_template(pk, items[i], replicas);
}
