/*
 * node.c - what the node says about itself: the Node resource sent as
 * node.registered on lark.in.<node>.sched.node (metadata.name = the
 * node; spec: cluster, labels, addresses, runtimes, capacity with
 * devices; the robots and cameras of the device file, by their
 * names, kinds, modes' names, ROS settings, subnets and cameras' sources
 * and sizes: launch lines and users stay here). NodeSpec refuses unknown
 * fields, so the OS, architecture
 * and agent version travel as labels (rlark.io/os, rlark.io/arch,
 * rlark.io/agent-version). Capacity not given is measured: CPUs online,
 * MemTotal in MiB, no GPU.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "devices.h"
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

/*
 * The node's lists: the strings copied into text (edge_parse_kv hands
 * over pieces of a buffer of its own), the entries pointing into it. A
 * list of at most 4 KiB has at most 1024 "k=v" entries.
 */
enum { LIST_MAX = 1024, ADDRS_MAX = 16 };

typedef struct node_lists {
  char text[4 * 4096];
  size_t used;
  bus_str_kv labels[LIST_MAX + 3];
  bus_u64_kv devices[LIST_MAX];
  bus_str runtimes[LIST_MAX];
  bus_str addrs[ADDRS_MAX];
  char addr[ADDRS_MAX][INET6_ADDRSTRLEN];
  uint32_t nlabels, ndev, nrt, naddrs;
  /* the device file's devices, as NodeSpec.devices */
  bus_device named[EDGE_DEV_MAX];
  bus_str modes[EDGE_DEV_MAX][EDGE_DEV_MODES_MAX];
  char source[EDGE_DEV_MAX][EDGE_DEV_PATH_SZ + 8];
  char range[EDGE_DEV_MAX][2 * EDGE_DEV_IP_SZ + 2];
  uint32_t nnamed;
} node_lists;

/* s[0..n) into l's text; cut to what room is left. */
static bus_str
keep_n(node_lists *l, const char *s, size_t n) {
  if (n > sizeof l->text - l->used)
    n = sizeof l->text - l->used;
  bus_str b = {l->text + l->used, (uint32_t)n};
  memcpy(l->text + l->used, s, n);
  l->used += n;
  return b;
}

static bus_str
keep(node_lists *l, const char *s) {
  return keep_n(l, s, strlen(s));
}

static int
label_kv(const char *k, const char *v, void *ud) {
  node_lists *l = ud;
  l->labels[l->nlabels++] = (bus_str_kv){keep(l, k), keep(l, v)};
  return 0;
}

static int
device_kv(const char *k, const char *v, void *ud) {
  node_lists *l = ud;
  uint64_t n = 0;
  int rc = parse_u64(v, &n, 0);
  if (!rc)
    l->devices[l->ndev++] = (bus_u64_kv){keep(l, k), n};
  return rc;
}

/* The node's addresses: every one but loopback and IPv6 link-local, at
 * most 16; 127.0.0.1 when there is none. */
static void
addresses(node_lists *l) {
  struct ifaddrs *ifs = NULL, *i;
  int n = 0;
  if (getifaddrs(&ifs) == 0)
    for (i = ifs; i && n < ADDRS_MAX; i = i->ifa_next) {
      if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK))
        continue;
      if (i->ifa_addr->sa_family == AF_INET)
        inet_ntop(AF_INET,
                  &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
                  l->addr[n++], INET6_ADDRSTRLEN);
      else if (i->ifa_addr->sa_family == AF_INET6) {
        struct in6_addr *a6 =
            &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
        if (!IN6_IS_ADDR_LINKLOCAL(a6))
          inet_ntop(AF_INET6, a6, l->addr[n++], INET6_ADDRSTRLEN);
      }
    }
  if (ifs)
    freeifaddrs(ifs);
  if (!n)
    strcpy(l->addr[n++], "127.0.0.1");
  for (int k = 0; k < n; k++)
    l->addrs[k] = bus_str_of(l->addr[k]);
  l->naddrs = (uint32_t)n;
}

void
edge_node_first_address(char *out, size_t cap) {
  node_lists *l = calloc(1, sizeof *l);
  if (l)
    addresses(l);
  snprintf(out, cap, "%s", l ? l->addr[0] : "127.0.0.1");
  free(l);
}

/* The runtimes of "a,b", empty pieces passed over. */
static void
runtimes(const edge_config *cfg, node_lists *l) {
  for (const char *s = cfg->runtimes; s && *s && l->nrt < LIST_MAX;) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len)
      l->runtimes[l->nrt++] = keep_n(l, s, len);
    s = end ? end + 1 : s + len;
  }
}

/* A robot's ROS settings and subnet, as Device i. */
static void
robot_named(node_lists *l, const edge_device *d, int i) {
  bus_device *v = &l->named[i];
  for (int m = 0; m < d->nmodes && m < EDGE_DEV_MODES_MAX; m++)
    l->modes[i][m] = bus_str_of(d->modes[m].name);
  v->has_modes = 1;
  v->modes = (bus_str_list){l->modes[i], (uint32_t)d->nmodes};
  v->has_rosMasterUri = d->kind == EDGE_DEV_ROS && d->ros_master_uri[0];
  v->rosMasterUri = bus_str_of(d->ros_master_uri);
  v->has_rosDomainId = d->kind == EDGE_DEV_ROS2 && d->ros_domain_id >= 0;
  v->rosDomainId = (uint64_t)(d->ros_domain_id < 0 ? 0 : d->ros_domain_id);
  if (!d->subnet.set)
    return;
  const edge_dev_subnet *s = &d->subnet;
  snprintf(l->range[i], sizeof l->range[i], "%s-%s", s->first, s->last);
  v->has_subnet = 1;
  v->subnet = (bus_subnet){.parent = bus_str_of(s->parent),
                           .cidr = bus_str_of(s->cidr),
                           .range = bus_str_of(l->range[i]),
                           .has_gateway = s->gateway[0] != 0,
                           .gateway = bus_str_of(s->gateway)};
}

/* The device file's robots and cameras as NodeSpec.devices. */
static void
named_devices(const edge_config *cfg, node_lists *l) {
  static const char *const src[] = {"pattern", "files:", "v4l2:"};
  for (int i = 0; cfg->devfile && i < cfg->devfile->n && i < EDGE_DEV_MAX;
       i++) {
    const edge_device *d = &cfg->devfile->v[i];
    bus_device *v = &l->named[l->nnamed++];
    v->name = bus_str_of(d->name);
    v->kind = bus_str_of(edge_dev_kind_name(d->kind));
    if (d->kind != EDGE_DEV_CAMERA) {
      robot_named(l, d, i);
      continue;
    }
    snprintf(l->source[i], sizeof l->source[i], "%s%s", src[d->source],
             d->path);
    v->has_source = v->has_width = v->has_height = v->has_fps = 1;
    v->source = bus_str_of(l->source[i]);
    v->width = d->width;
    v->height = d->height;
    v->fps = d->fps;
  }
}

static int
describe(const edge_config *cfg, node_lists *l, msgpack_sbuffer *sb) {
  res r = {0};
  struct utsname u;
  int rc;
  if ((rc = edge_parse_kv(cfg->capacity, capacity_kv, &r)) ||
      (rc = edge_parse_kv(cfg->labels, label_kv, l)) ||
      (rc = edge_parse_kv(cfg->devices, device_kv, l)))
    return rc;
  uname(&u);
  label_kv("rlark.io/os", "linux", l);
  label_kv("rlark.io/arch", u.machine, l);
  label_kv("rlark.io/agent-version", EDGE_VERSION, l);
  runtimes(cfg, l);
  addresses(l);
  named_devices(cfg, l);
  bus_node_res n = {
      .apiVersion = BUS_STR("rlinf.io/v1alpha1"),
      .kind = BUS_STR("Node"),
      .metadata = {.name = bus_str_of(cfg->node)},
      .spec = {.cluster = bus_str_of(cfg->cluster),
               .has_labels = 1,
               .labels = {l->labels, l->nlabels},
               .has_addresses = 1,
               .addresses = {l->addrs, l->naddrs},
               .has_runtimes = 1,
               .runtimes = {l->runtimes, l->nrt},
               .capacity = {.has_cpu = 1,
                            .cpu = r.has_cpu ? r.cpu
                                             : (uint64_t)sysconf(
                                                   _SC_NPROCESSORS_ONLN),
                            .has_memory = 1,
                            .memory = r.has_mem ? r.memory : mem_total_mib(),
                            .has_gpu = 1,
                            .gpu = r.has_gpu ? r.gpu : 0,
                            .has_devices = l->ndev > 0,
                            .devices = {l->devices, l->ndev}},
               .has_devices = l->nnamed > 0,
               .devices = {l->named, l->nnamed}}};
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  return bus_node_res_write(&pk, &n) ? -ENOMEM : 0;
}

int
edge_node_resource(const edge_config *cfg, msgpack_sbuffer *sb) {
  node_lists *l = calloc(1, sizeof *l);
  if (!l)
    return bus_error(-ENOMEM, "out of memory describing the node");
  int rc = describe(cfg, l, sb);
  free(l);
  return rc;
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
