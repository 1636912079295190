/*
 * main.c - lark-edge: the runtime of one node.
 *
 *   lark-edge --node NAME --data DIR [--url URL] [--creds FILE]
 *             [--cluster C] [--labels k=v,...] [--capacity cpu=8,...]
 *             [--devices rlinf.io/device=2] [--runtimes raw]
 *             [--pod-cidr 10.88.1.0/24]
 *             [--heartbeat SECONDS] [--slice-wait SECONDS]
 *             [--grace SECONDS]
 *             [--artifact-ca FILE] [--artifact-max SIZE]
 *             [--artifact-timeout SECONDS]
 *             [--device-file FILE [--device-share I/N]]
 *             [--tls-dir DIR] [--weights-listen HOST:PORT]
 *             [--weights-keep K] [--weights-max-bytes SIZE]
 *             [--weights-relay HOST:PORT]
 *
 * Settings come from flags over the environment (LARK_URL, LARK_CREDS,
 * LARK_DATA, LARK_NODE, LARK_POD_CIDR, LARK_ARTIFACT_CA, LARK_DEVICE_FILE,
 * LARK_TLS_DIR, LARK_WEIGHTS_LISTEN, LARK_WEIGHTS_RELAY, LARK_HEARTBEAT and
 * LARK_SLICE_WAIT in seconds) over defaults.
 * The TLS directory (ca.pem, cert.pem, key.pem: the node's certificate
 * from the platform's signer) lets the node serve and fetch Jobs'
 * weights (weights.h). The device file declares the node's robots and cameras
 * (devices.h); a bad one stops the agent before it starts (exit 2), with
 * the line it is on. `--device-share I/N` keeps device j of the file
 * (robots first, then cameras) when j mod N == I-1: how `larkctl up`
 * shares one file among N local nodes. A
 * pod CIDR makes the node offer raw+netns (needs root). The artifact CA
 * file is trusted for https artifacts beside the system's CAs. `lark-edge
 * pod-shim` is the wrapper the agent runs each pod under (shim.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "edge.h"
#include "fetch.h"

static const char usage[] =
    "usage: lark-edge --node NAME --data DIR [--url URL] [--creds FILE]\n"
    "                 [--cluster C] [--labels k=v,...] "
    "[--capacity cpu=N,memory=MiB,gpu=N]\n"
    "                 [--devices name=N,...] [--runtimes raw] "
    "[--heartbeat S] [--slice-wait S]\n"
    "                 [--grace S]\n"
    "                 [--pod-cidr a.b.c.d/len]  (raw+netns pods; root)\n"
    "                 [--artifact-ca FILE] [--artifact-max SIZE] "
    "[--artifact-timeout S]\n"
    "                 [--device-file FILE [--device-share I/N]]\n"
    "                 [--tls-dir DIR] [--weights-listen HOST:PORT] "
    "[--weights-keep K]\n"
    "                 [--weights-max-bytes SIZE] [--weights-relay HOST:PORT]\n";

static int
seconds_ms(const char *s, int *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || v <= 0 || v > 86400)
    return -1;
  *out = (int)(v * 1000);
  return 0;
}

/* "4096", "512Mi", "4Gi": bytes, 1 to 1 TiB. */
static int
size_bytes(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = !strcmp(end, "Ki")   ? 10
              : !strcmp(end, "Mi") ? 20
              : !strcmp(end, "Gi") ? 30
              : !strcmp(end, "Ti") ? 40
              : !*end              ? 0
                                   : -1;
  if (end == s || errno || shift < 0 || !v || v > (1ull << (40 - shift)))
    return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

/* The CA file as an absolute path (pods run elsewhere), readable now. */
static int
ca_file(const char *s, const char **out) {
  static char path[PATH_MAX];
  FILE *f = realpath(s, path) ? fopen(path, "re") : NULL;
  if (!f) {
    fprintf(stderr, "lark-edge: artifact CA %s: %s\n", s, strerror(errno));
    return -1;
  }
  fclose(f);
  *out = path;
  return 0;
}

static const char *
env_or(const char *name, const char *def) {
  const char *v = getenv(name);
  return v && *v ? v : def;
}

/* How a flag's value goes into its field of edge_config. */
enum { STR, MS, SECONDS, BYTES, COUNT };

static const struct flag {
  const char *name;
  int kind;
  size_t off; /* (size_t)-1: main's own */
} flags[] = {
    {"node", STR, offsetof(edge_config, node)},
    {"cluster", STR, offsetof(edge_config, cluster)},
    {"labels", STR, offsetof(edge_config, labels)},
    {"capacity", STR, offsetof(edge_config, capacity)},
    {"devices", STR, offsetof(edge_config, devices)},
    {"runtimes", STR, offsetof(edge_config, runtimes)},
    {"url", STR, offsetof(edge_config, url)},
    {"creds", STR, offsetof(edge_config, creds)},
    {"data", STR, offsetof(edge_config, data)},
    {"heartbeat", MS, offsetof(edge_config, heartbeat_ms)},
    {"slice-wait", MS, offsetof(edge_config, slice_wait_ms)},
    {"grace", MS, offsetof(edge_config, grace_ms)},
    {"pod-cidr", STR, offsetof(edge_config, pod_cidr)},
    {"artifact-ca", STR, offsetof(edge_config, artifact_ca)},
    {"artifact-max", BYTES, offsetof(edge_config, artifact_max)},
    {"artifact-timeout", SECONDS, offsetof(edge_config, artifact_timeout_s)},
    {"device-file", STR, offsetof(edge_config, device_file)},
    {"device-share", STR, (size_t)-1},
    {"tls-dir", STR, offsetof(edge_config, tls_dir)},
    {"weights-listen", STR, offsetof(edge_config, weights_listen)},
    {"weights-relay", STR, offsetof(edge_config, weights_relay)},
    {"weights-keep", COUNT, offsetof(edge_config, weights_keep)},
    {"weights-max-bytes", BYTES, offsetof(edge_config, weights_max)},
};
enum { NFLAGS = sizeof flags / sizeof flags[0] };

/* The device file's robots and cameras, this node's share of them
 * ("I/N", or NULL: all), into d; -1 after saying why. */
static int
device_file(const char *path, const char *share, edge_devices *d) {
  char err[1024], end;
  int i = 1, n = 1;
  if (share && (sscanf(share, "%d/%d%c", &i, &n, &end) != 2 || i < 1 || n < i ||
                n > 1024)) {
    fprintf(stderr,
            "lark-edge: --device-share %s: not I/N with 1 <= I <= "
            "N <= 1024\n",
            share);
    return -1;
  }
  if (edge_devices_load(path, d, err, sizeof err)) {
    fprintf(stderr, "lark-edge: device file %s\n", err);
    return -1;
  }
  edge_devices_share(d, i, n);
  return 0;
}

/* 1 to 1000. */
static int
count(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < 1 || v > 1000)
    return -1;
  *out = (int)v;
  return 0;
}

/* Flag f's value arg into c; 1 when it is bad. */
static int
set_opt(edge_config *c, const struct flag *f, const char *arg) {
  void *field = (char *)c + f->off;
  int ms = 0, bad = 0;
  switch (f->kind) {
  case STR:
    *(const char **)field = arg;
    break;
  case MS:
    bad = seconds_ms(arg, field);
    break;
  case SECONDS:
    bad = seconds_ms(arg, &ms);
    *(int *)field = ms < 1000 ? 1 : ms / 1000;
    break;
  case COUNT:
    bad = count(arg, field);
    break;
  default:
    bad = size_bytes(arg, field);
  }
  return bad;
}

/* The flags as getopt_long reads them: each one's index is its value. */
static void
getopt_table(struct option *o) {
  for (int i = 0; i < NFLAGS; i++)
    o[i] = (struct option){flags[i].name, 1, 0, i};
  o[NFLAGS] = (struct option){"help", 0, 0, '?'};
  o[NFLAGS + 1] = (struct option){0, 0, 0, 0};
}

int
main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "pod-shim"))
    return edge_shim_main(argc, argv);
  edge_config c;
  edge_config_init(&c);
  c.url = env_or("LARK_URL", c.url);
  c.creds = env_or("LARK_CREDS", NULL);
  c.data = env_or("LARK_DATA", NULL);
  c.node = env_or("LARK_NODE", NULL);
  c.pod_cidr = env_or("LARK_POD_CIDR", NULL);
  c.device_file = env_or("LARK_DEVICE_FILE", NULL);
  c.tls_dir = env_or("LARK_TLS_DIR", NULL);
  c.weights_listen = env_or("LARK_WEIGHTS_LISTEN", NULL);
  c.weights_relay = env_or("LARK_WEIGHTS_RELAY", NULL);
  const char *ca = env_or("LARK_ARTIFACT_CA", NULL), *share = NULL;
  /* as --heartbeat and --slice-wait; reach the agents `larkctl up` starts */
  const char *hb = env_or("LARK_HEARTBEAT", NULL);
  const char *sw = env_or("LARK_SLICE_WAIT", NULL);
  if ((hb && seconds_ms(hb, &c.heartbeat_ms)) ||
      (sw && seconds_ms(sw, &c.slice_wait_ms))) {
    fputs(usage, stderr);
    return 2;
  }
  struct option opts[NFLAGS + 2];
  getopt_table(opts);
  c.artifact_ca = ca;
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
    if (o >= 0 && o < NFLAGS && flags[o].off == (size_t)-1)
      share = optarg;
    else if (o < 0 || o >= NFLAGS || set_opt(&c, &flags[o], optarg)) {
      fputs(usage, stderr);
      return 2;
    }
  if (!c.node || !c.data || optind != argc || (share && !c.device_file)) {
    fputs(usage, stderr);
    return 2;
  }
  ca = c.artifact_ca; /* made absolute, or none */
  c.artifact_ca = NULL;
  if (ca && *ca && ca_file(ca, &c.artifact_ca))
    return 2;
  edge_devices devs = {0};
  if (c.device_file && *c.device_file) {
    if (device_file(c.device_file, share, &devs))
      return 2;
    c.devfile = &devs;
  }
  int rc = edge_agent_run(&c) ? 1 : 0;
  edge_devices_free(&devs); /* empty unless the agent never took it */
  return rc;
}
