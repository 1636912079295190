/*
 * main.c - lark-edge: the runtime of one node.
 *
 *   lark-edge --node NAME --data DIR [--url URL] [--creds FILE]
 *             [--cluster C] [--labels k=v,...] [--capacity cpu=8,...]
 *             [--devices rlinf.io/device=2] [--runtimes raw]
 *             [--pod-cidr 10.88.1.0/24]
 *             [--heartbeat SECONDS] [--grace SECONDS]
 *             [--artifact-ca FILE] [--artifact-max SIZE]
 *             [--artifact-timeout SECONDS]
 *
 * Settings come from flags over the environment (LARK_URL, LARK_CREDS,
 * LARK_DATA, LARK_NODE, LARK_POD_CIDR, LARK_ARTIFACT_CA) over defaults. A
 * pod CIDR makes the node offer raw+netns (needs root). The artifact CA
 * file is trusted for https artifacts beside the system's CAs. `lark-edge
 * pod-shim` is the wrapper the agent runs each pod under (shim.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge.h"
#include "fetch.h"

static const char usage[] =
    "usage: lark-edge --node NAME --data DIR [--url URL] [--creds FILE]\n"
    "                 [--cluster C] [--labels k=v,...] "
    "[--capacity cpu=N,memory=MiB,gpu=N]\n"
    "                 [--devices name=N,...] [--runtimes raw] "
    "[--heartbeat S] [--grace S]\n"
    "                 [--pod-cidr a.b.c.d/len]  (raw+netns pods; root)\n"
    "                 [--artifact-ca FILE] [--artifact-max SIZE] "
    "[--artifact-timeout S]\n";

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

static const struct option opts[] = {{"node", 1, 0, 'n'},
                                     {"cluster", 1, 0, 'c'},
                                     {"labels", 1, 0, 'l'},
                                     {"capacity", 1, 0, 'C'},
                                     {"devices", 1, 0, 'd'},
                                     {"runtimes", 1, 0, 'r'},
                                     {"url", 1, 0, 'u'},
                                     {"creds", 1, 0, 'k'},
                                     {"data", 1, 0, 'D'},
                                     {"heartbeat", 1, 0, 'h'},
                                     {"grace", 1, 0, 'g'},
                                     {"pod-cidr", 1, 0, 'p'},
                                     {"artifact-ca", 1, 0, 'A'},
                                     {"artifact-max", 1, 0, 'M'},
                                     {"artifact-timeout", 1, 0, 'T'},
                                     {"help", 0, 0, '?'},
                                     {0, 0, 0, 0}};

/* Option o with value arg into c (the artifact CA's name into *ca); 1
 * when it is unknown or its value is bad. */
static int
set_opt(edge_config *c, int o, const char *arg, const char **ca) {
  int bad = 0, timeout_ms = 0;
  switch (o) {
  case 'n':
    c->node = arg;
    break;
  case 'c':
    c->cluster = arg;
    break;
  case 'l':
    c->labels = arg;
    break;
  case 'C':
    c->capacity = arg;
    break;
  case 'd':
    c->devices = arg;
    break;
  case 'r':
    c->runtimes = arg;
    break;
  case 'u':
    c->url = arg;
    break;
  case 'k':
    c->creds = arg;
    break;
  case 'D':
    c->data = arg;
    break;
  case 'h':
    bad = seconds_ms(arg, &c->heartbeat_ms);
    break;
  case 'g':
    bad = seconds_ms(arg, &c->grace_ms);
    break;
  case 'p':
    c->pod_cidr = arg;
    break;
  case 'A':
    *ca = arg;
    break;
  case 'M':
    bad = size_bytes(arg, &c->artifact_max);
    break;
  case 'T':
    bad = seconds_ms(arg, &timeout_ms);
    c->artifact_timeout_s = timeout_ms < 1000 ? 1 : timeout_ms / 1000;
    break;
  default:
    bad = 1;
  }
  return bad;
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
  const char *ca = env_or("LARK_ARTIFACT_CA", NULL);
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1)
    if (set_opt(&c, o, optarg, &ca)) {
      fputs(usage, stderr);
      return 2;
    }
  if (!c.node || !c.data || optind != argc) {
    fputs(usage, stderr);
    return 2;
  }
  if (ca && *ca && ca_file(ca, &c.artifact_ca))
    return 2;
  return edge_agent_run(&c) ? 1 : 0;
}
