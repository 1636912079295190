/*
 * node.c - what the node says about itself: the Node resource sent as
 * node.registered on lark.in.<node>.sched.node (metadata.name = the
 * node; spec: cluster, labels, addresses, runtimes, capacity with
 * devices). NodeSpec refuses unknown fields, so the OS, architecture
 * and agent version travel as labels (rlark.io/os, rlark.io/arch,
 * rlark.io/agent-version). Capacity not given is measured: CPUs online,
 * MemTotal in MiB, no GPU.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "edge.h"

int
edge_parse_kv(const char *s, edge_kv_cb cb, void *ud) {
  char buf[4096];
  if (!s || !*s)
    return 0;
  if (strlen(s) >= sizeof buf)
    return bus_error(BUS_EINVAL, "list too long: %.40s...", s);
  strcpy(buf, s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok)
      return bus_error(BUS_EINVAL, "expected key=value, got %s", tok);
    *eq = 0;
    int rc = cb(tok, eq + 1, ud);
    if (rc)
      return rc;
  }
  return 0;
}

typedef struct res {
  uint64_t cpu, memory, gpu;
  int has_cpu, has_mem, has_gpu;
} res;

static int
parse_u64(const char *v, uint64_t *out, int memory) {
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  if (end == v)
    return bus_error(BUS_EINVAL, "not a number: %s", v);
  if (memory && *end) { /* Ki, Mi, Gi, Ti; plain is MiB */
    if (!strcmp(end, "Ki"))
      n /= 1024;
    else if (!strcmp(end, "Gi") || !strcmp(end, "G"))
      n *= 1024;
    else if (!strcmp(end, "Ti") || !strcmp(end, "T"))
      n *= 1024 * 1024;
    else if (strcmp(end, "Mi") && strcmp(end, "M"))
      return bus_error(BUS_EINVAL, "unknown memory unit in %s", v);
  } else if (*end)
    return bus_error(BUS_EINVAL, "not a number: %s", v);
  *out = n;
  return 0;
}

static int
capacity_kv(const char *k, const char *v, void *ud) {
  res *r = ud;
  if (!strcmp(k, "cpu"))
    return r->has_cpu = 1, parse_u64(v, &r->cpu, 0);
  if (!strcmp(k, "memory"))
    return r->has_mem = 1, parse_u64(v, &r->memory, 1);
  if (!strcmp(k, "gpu"))
    return r->has_gpu = 1, parse_u64(v, &r->gpu, 0);
  return bus_error(BUS_EINVAL, "unknown capacity %s (cpu, memory, gpu)", k);
}

static uint64_t
mem_total_mib(void) {
  FILE *f = fopen("/proc/meminfo", "re");
  unsigned long long kb = 0;
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb / 1024;
}

static int
count_kv(const char *k, const char *v, void *ud) {
  (void)k, (void)v;
  ++*(int *)ud;
  return 0;
}

static int
pack_str_kv(const char *k, const char *v, void *ud) {
  msgpack_packer *pk = ud;
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_str_with_body(pk, v, strlen(v));
  return 0;
}

static int
pack_uint_kv(const char *k, const char *v, void *ud) {
  msgpack_packer *pk = ud;
  uint64_t n = 0;
  int rc = parse_u64(v, &n, 0);
  if (rc)
    return rc;
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_uint64(pk, n);
  return 0;
}

static void
pack_addresses(msgpack_packer *pk) {
  struct ifaddrs *ifs = NULL, *i;
  char addr[16][INET6_ADDRSTRLEN];
  int n = 0;
  if (getifaddrs(&ifs) == 0)
    for (i = ifs; i && n < 16; i = i->ifa_next) {
      if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK))
        continue;
      if (i->ifa_addr->sa_family == AF_INET)
        inet_ntop(AF_INET,
                  &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
                  addr[n++], INET6_ADDRSTRLEN);
      else if (i->ifa_addr->sa_family == AF_INET6) {
        struct in6_addr *a6 =
            &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
        if (!IN6_IS_ADDR_LINKLOCAL(a6))
          inet_ntop(AF_INET6, a6, addr[n++], INET6_ADDRSTRLEN);
      }
    }
  if (ifs)
    freeifaddrs(ifs);
  if (!n)
    strcpy(addr[n++], "127.0.0.1");
  msgpack_pack_array(pk, (uint32_t)n);
  for (int k = 0; k < n; k++)
    msgpack_pack_str_with_body(pk, addr[k], strlen(addr[k]));
}

static void
pack_capacity(msgpack_packer *pk, const res *r, const char *devices, int ndev) {
  msgpack_pack_map(pk, 3 + (ndev > 0));
  msgpack_pack_str_with_body(pk, "cpu", 3);
  msgpack_pack_uint64(pk, r->has_cpu ? r->cpu
                                     : (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
  msgpack_pack_str_with_body(pk, "memory", 6);
  msgpack_pack_uint64(pk, r->has_mem ? r->memory : mem_total_mib());
  msgpack_pack_str_with_body(pk, "gpu", 3);
  msgpack_pack_uint64(pk, r->has_gpu ? r->gpu : 0);
  if (ndev) {
    msgpack_pack_str_with_body(pk, "devices", 7);
    msgpack_pack_map(pk, (uint32_t)ndev);
    edge_parse_kv(devices, pack_uint_kv, pk);
  }
}

int
edge_node_resource(const edge_config *cfg, msgpack_sbuffer *sb) {
  res r = {0};
  int nlabels = 0, ndev = 0, nrt = 0, rc;
  struct utsname u;
  char rts[256];
  if ((rc = edge_parse_kv(cfg->capacity, capacity_kv, &r)) ||
      (rc = edge_parse_kv(cfg->labels, count_kv, &nlabels)) ||
      (rc = edge_parse_kv(cfg->devices, count_kv, &ndev)))
    return rc;
  uname(&u);
  snprintf(rts, sizeof rts, "%s", cfg->runtimes);
  for (char *s = rts; *s; s++)
    nrt += *s == ',';
  nrt += rts[0] != 0;
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 4);
  pack_str_kv("apiVersion", "rlinf.io/v1alpha1", &pk);
  pack_str_kv("kind", "Node", &pk);
  msgpack_pack_str_with_body(&pk, "metadata", 8);
  msgpack_pack_map(&pk, 1);
  pack_str_kv("name", cfg->node, &pk);
  msgpack_pack_str_with_body(&pk, "spec", 4);
  msgpack_pack_map(&pk, 5);
  pack_str_kv("cluster", cfg->cluster, &pk);
  msgpack_pack_str_with_body(&pk, "labels", 6);
  msgpack_pack_map(&pk, (uint32_t)nlabels + 3);
  edge_parse_kv(cfg->labels, pack_str_kv, &pk);
  pack_str_kv("rlark.io/os", "linux", &pk);
  pack_str_kv("rlark.io/arch", u.machine, &pk);
  pack_str_kv("rlark.io/agent-version", EDGE_VERSION, &pk);
  msgpack_pack_str_with_body(&pk, "addresses", 9);
  pack_addresses(&pk);
  msgpack_pack_str_with_body(&pk, "runtimes", 8);
  msgpack_pack_array(&pk, (uint32_t)nrt);
  char *save = NULL;
  for (char *t = strtok_r(rts, ",", &save); t; t = strtok_r(NULL, ",", &save))
    msgpack_pack_str_with_body(&pk, t, strlen(t));
  msgpack_pack_str_with_body(&pk, "capacity", 8);
  pack_capacity(&pk, &r, cfg->devices, ndev);
  return 0;
}

int
edge_runtime_offered(const edge_config *cfg, const char *rt) {
  size_t n = strlen(rt);
  for (const char *s = cfg->runtimes; s && *s;) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == n && !strncmp(s, rt, n))
      return 1;
    s = end ? end + 1 : s + len;
  }
  return 0;
}
