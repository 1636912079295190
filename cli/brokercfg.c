/*
 * brokercfg.c - credentials, the accounts file and broker configs.
 *
 * Invariants:
 * - A seed file, once written, is never replaced: re-running `larkctl up`
 *   or `node add` keeps every key. The registry (creds/users) is rewritten
 *   whole through a temporary file and rename, under an flock on
 *   creds/.lock, so concurrent larkctl runs never lose a line.
 * - Every principal becomes an explicit nkey user of the LARK account and
 *   nothing else is rendered: no authorization block, no no_auth_user, so
 *   the broker refuses anonymous clients (CVE-2023-47090).
 * - A node's rules are exactly docs/design.md section 6; the only text that
 *   varies is the node's name, which bus_name_valid has checked, so it is
 *   one subject token and safe inside quotes. A relay's rules vary by its
 *   nkey public key (base32, checked on load) and its cluster (a name).
 * - Templates are copied line by line; comment lines are left alone, and
 *   an unknown placeholder or a missing value fails the render.
 * - Seeds are wiped from memory (sodium_memzero) as soon as they are used.
 */
#include "brokercfg.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#ifndef LARK_SOURCE_DIR
#define LARK_SOURCE_DIR "."
#endif

const char *const lark_service_names[] = {
    "lark-catalog", "lark-scheduler", "lark-dag",
    "lark-ipam",    "lark-signer",    "lark-logs",
    "lark-relay",   "lark-reports",   NULL};

const char *const lark_up_services[] = {
    "lark-catalog", "lark-scheduler", "lark-dag",     "lark-ipam",
    "lark-signer",  "lark-logs",      "lark-reports", NULL};

static const char *const role_names[] = {"admin", "service", "user",
                                         "node",  "relay",   "relay-hub"};

static _Thread_local char cfg_err[512];

static int cfg_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
cfg_fail(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cfg_err, sizeof cfg_err, fmt, ap);
  va_end(ap);
  return err;
}

const char *
lark_cfg_error(void) {
  return cfg_err;
}

const char *
lark_role_name(lark_role r) {
  if ((unsigned)r >= sizeof role_names / sizeof role_names[0])
    return NULL;
  return role_names[r];
}

int
lark_role_parse(const char *s, lark_role *r) {
  for (size_t i = 0; i < sizeof role_names / sizeof role_names[0]; i++)
    if (!strcmp(s, role_names[i])) {
      *r = (lark_role)i;
      return 0;
    }
  return BUS_EINVAL;
}

/* ------------------------------------------------------------- strings */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static void
sb_addn(sbuf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

static void
sb_add(sbuf *b, const char *s) {
  sb_addn(b, s, strlen(s));
}

static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    b->oom = 1;
    return;
  }
  sb_addn(b, tmp, (size_t)n);
}

/* ---------------------------------------------------------------- files */

int
lark_mkdirs(const char *path, unsigned mode) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return cfg_fail(BUS_EINVAL, "path too long: %s", path);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p)
      continue;
    char c = *p;
    *p = 0;
    if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST)
      return cfg_fail(-errno, "cannot create %s: %s", buf, strerror(errno));
    *p = c;
    if (!c)
      break;
  }
  return 0;
}

/* Write data to path through a temporary file and rename, mode 0600. */
static int
write_atomic(const char *path, const char *data, size_t len) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >=
      (int)sizeof tmp)
    return cfg_fail(BUS_EINVAL, "path too long: %s", path);
  int rc = 0;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return cfg_fail(-errno, "cannot write %s: %s", tmp, strerror(errno));
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      rc = cfg_fail(-errno, "cannot write %s: %s", tmp, strerror(errno));
      goto out;
    }
    off += (size_t)w;
  }
  if (fsync(fd) < 0 || rename(tmp, path) < 0)
    rc = cfg_fail(-errno, "cannot write %s: %s", path, strerror(errno));
out:
  close(fd);
  if (rc < 0)
    unlink(tmp);
  return rc;
}

/* The whole file, malloc'd and NUL-terminated. */
static int
read_all(const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "re");
  if (!f)
    return -errno;
  sbuf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    sb_addn(&b, chunk, n);
  fclose(f);
  if (b.oom) {
    free(b.p);
    return -ENOMEM;
  }
  if (!b.p)
    sb_add(&b, "");
  *out = b.p;
  if (len)
    *len = b.len;
  return b.oom ? -ENOMEM : 0;
}

/* ---------------------------------------------------------- credentials */

int
lark_creds_path(const char *data, const char *name, char *out, size_t cap) {
  if (snprintf(out, cap, "%s/creds/%s.nk", data, name) >= (int)cap)
    return cfg_fail(BUS_EINVAL, "path too long under %s", data);
  return 0;
}

static int
parse_line(char *line, lark_principal *p) {
  char *save = NULL;
  char *name = strtok_r(line, " \t\r\n", &save);
  char *role = strtok_r(NULL, " \t\r\n", &save);
  char *pub = strtok_r(NULL, " \t\r\n", &save);
  char *cluster = strtok_r(NULL, " \t\r\n", &save);
  if (!name || name[0] == '#')
    return 1; /* blank or comment */
  if (!role || !pub || !bus_name_valid(name, BUS_NAME_MAX) ||
      lark_role_parse(role, &p->role) < 0 || strlen(pub) != BUS_NKEY_PUB_LEN ||
      pub[0] != 'U' ||
      strspn(pub, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != BUS_NKEY_PUB_LEN ||
      (cluster &&
       (p->role != LARK_ROLE_RELAY || !bus_name_valid(cluster, BUS_NAME_MAX))))
    return -1;
  snprintf(p->name, sizeof p->name, "%s", name);
  memcpy(p->pub, pub, BUS_NKEY_PUB_LEN + 1);
  snprintf(p->cluster, sizeof p->cluster, "%s", cluster ? cluster : "");
  return 0;
}

static int
registry_path(const char *data, char *out, size_t cap) {
  if (snprintf(out, cap, "%s/creds/users", data) >= (int)cap)
    return cfg_fail(BUS_EINVAL, "path too long under %s", data);
  return 0;
}

int
lark_creds_load(const char *data, lark_principal **out, size_t *n) {
  char path[PATH_MAX], *text = NULL;
  *out = NULL;
  *n = 0;
  int rc = registry_path(data, path, sizeof path);
  if (rc < 0)
    return rc;
  rc = read_all(path, &text, NULL);
  if (rc == -ENOENT)
    return 0;
  if (rc < 0)
    return cfg_fail(rc, "cannot read %s: %s", path, strerror(-rc));
  size_t cap = 16, count = 0, lineno = 0;
  lark_principal *v = calloc(cap, sizeof *v);
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); v && line;
       line = strtok_r(NULL, "\n", &save)) {
    lineno++;
    if (count == cap) {
      lark_principal *nv = realloc(v, 2 * cap * sizeof *v);
      if (!nv)
        break;
      v = nv;
      cap *= 2;
    }
    int r = parse_line(line, &v[count]);
    if (r < 0) {
      rc = cfg_fail(BUS_EMALFORMED, "%s:%zu: expected <name> <role> <key>",
                    path, lineno);
      goto out;
    }
    if (r == 0)
      count++;
  }
  if (!v) {
    rc = -ENOMEM;
    goto out;
  }
  *out = v;
  *n = count;
  v = NULL;
out:
  free(v);
  free(text);
  return rc;
}

static int
registry_write(const char *data, const lark_principal *p, size_t n) {
  char path[PATH_MAX];
  int rc = registry_path(data, path, sizeof path);
  if (rc < 0)
    return rc;
  sbuf b = {0};
  sb_add(&b, "# larkbus principals: name role public-key [cluster] "
             "(seeds in <name>.nk; written by larkctl)\n");
  for (size_t i = 0; i < n; i++)
    if (lark_role_name(p[i].role)) /* an unknown role is not written */
      sb_printf(&b, "%s %s %s%s%s\n", p[i].name, lark_role_name(p[i].role),
                p[i].pub, p[i].cluster[0] ? " " : "", p[i].cluster);
  rc = b.oom ? -ENOMEM : write_atomic(path, b.p, b.len);
  free(b.p);
  return rc;
}

/* Find the "SU..." seed in a creds file, whatever its layout. */
static int
seed_from_file(const char *path, char seed[BUS_NKEY_SEED_LEN + 1]) {
  char *text = NULL;
  size_t len = 0;
  int rc = read_all(path, &text, &len);
  if (rc < 0)
    return cfg_fail(rc, "cannot read %s: %s", path, strerror(-rc));
  rc = cfg_fail(BUS_EAUTH, "no nkey seed in %s", path);
  for (size_t i = 0; i + BUS_NKEY_SEED_LEN <= len; i++) {
    if (text[i] != 'S' || text[i + 1] != 'U' ||
        (i > 0 && strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", text[i - 1])))
      continue;
    size_t k = 0;
    while (k < BUS_NKEY_SEED_LEN && text[i + k] &&
           strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", text[i + k]))
      k++;
    if (k == BUS_NKEY_SEED_LEN) {
      memcpy(seed, text + i, BUS_NKEY_SEED_LEN);
      seed[BUS_NKEY_SEED_LEN] = 0;
      rc = 0;
      break;
    }
  }
  sodium_memzero(text, len);
  free(text);
  return rc;
}

/* The seed file for name: kept if present (its key derived), else new. */
static int
seed_ensure(const char *path, char pub[BUS_NKEY_PUB_LEN + 1], int *created) {
  char seed[BUS_NKEY_SEED_LEN + 1];
  int rc;
  *created = 0;
  if (access(path, F_OK) == 0) {
    rc = seed_from_file(path, seed);
    if (rc == 0 && (rc = bus_nkey_public(seed, pub)) < 0)
      cfg_fail(rc, "bad nkey seed in %s: %s", path, bus_last_error());
    goto out;
  }
  rc = bus_nkey_create(seed, pub);
  if (rc < 0) {
    cfg_fail(rc, "cannot create a nkey: %s", bus_last_error());
    goto out;
  }
  rc = bus_nkey_write(path, seed);
  if (rc < 0) {
    cfg_fail(rc, "cannot write %s: %s", path, bus_last_error());
    goto out;
  }
  chmod(path, 0600);
  *created = 1;
out:
  sodium_memzero(seed, sizeof seed);
  return rc;
}

static int
lock_creds(const char *data) {
  char dir[PATH_MAX], path[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s/creds", data) >= (int)sizeof dir ||
      snprintf(path, sizeof path, "%s/creds/.lock", data) >= (int)sizeof path)
    return cfg_fail(BUS_EINVAL, "path too long under %s", data);
  int rc = lark_mkdirs(dir, 0700);
  if (rc < 0)
    return rc;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return cfg_fail(-errno, "cannot open %s: %s", path, strerror(errno));
  if (flock(fd, LOCK_EX) < 0) {
    rc = cfg_fail(-errno, "cannot lock %s: %s", path, strerror(errno));
    close(fd);
    return rc;
  }
  return fd;
}

/* Put p in the registry (replacing its line) unless it is already there
 * exactly; a name held by another role is BUS_EEXISTS. */
static int
registry_put(const char *data, const lark_principal *p) {
  lark_principal *v = NULL;
  size_t n = 0, i;
  int rc = lark_creds_load(data, &v, &n);
  if (rc < 0)
    return rc;
  for (i = 0; i < n && strcmp(v[i].name, p->name); i++)
    ;
  if (i < n && v[i].role != p->role) {
    rc = cfg_fail(BUS_EEXISTS, "%s is already registered as a %s", p->name,
                  lark_role_name(v[i].role));
    goto out;
  }
  if (i < n && !strcmp(v[i].pub, p->pub) && !strcmp(v[i].cluster, p->cluster))
    goto out;
  if (i == n) {
    lark_principal *nv = realloc(v, (n + 1) * sizeof *v);
    if (!nv) {
      rc = -ENOMEM;
      goto out;
    }
    v = nv;
    n++;
  }
  v[i] = *p;
  rc = registry_write(data, v, n);
out:
  free(v);
  return rc;
}

static int creds_ensure(const char *data, const char *name, lark_role role,
                        const char *cluster, lark_principal *out, int *created);

int
lark_creds_ensure(const char *data, const char *name, lark_role role,
                  lark_principal *out, int *created) {
  if (role == LARK_ROLE_RELAY)
    return cfg_fail(BUS_EINVAL, "relay %s needs its cluster", name);
  return creds_ensure(data, name, role, "", out, created);
}

int
lark_creds_ensure_relay(const char *data, const char *name, const char *cluster,
                        lark_principal *out, int *created) {
  if (!bus_name_valid(cluster, BUS_NAME_MAX))
    return cfg_fail(BUS_ENAME, "invalid cluster '%s': use a-z, 0-9 and '-'",
                    cluster ? cluster : "");
  return creds_ensure(data, name, LARK_ROLE_RELAY, cluster, out, created);
}

static int
creds_ensure(const char *data, const char *name, lark_role role,
             const char *cluster, lark_principal *out, int *created) {
  lark_principal p;
  char path[PATH_MAX];
  int made = 0;
  memset(&p, 0, sizeof p);
  if (!bus_name_valid(name, BUS_NAME_MAX))
    return cfg_fail(BUS_ENAME, "invalid name '%s': use a-z, 0-9 and '-'", name);
  if (!lark_role_name(role))
    return cfg_fail(BUS_EINVAL, "unknown role %d", (int)role);
  int rc = lark_creds_path(data, name, path, sizeof path);
  if (rc < 0)
    return rc;
  int lock = lock_creds(data);
  if (lock < 0)
    return lock;
  snprintf(p.name, sizeof p.name, "%s", name);
  snprintf(p.cluster, sizeof p.cluster, "%s", cluster);
  p.role = role;
  rc = seed_ensure(path, p.pub, &made);
  if (rc == 0)
    rc = registry_put(data, &p);
  close(lock);
  if (rc == 0 && out)
    *out = p;
  if (created)
    *created = made;
  return rc;
}

/* ------------------------------------------------------------- accounts */

/*
 * A permission list. In each subject, %s stands for the principal's name,
 * %k for its nkey public key and %c for its cluster (p NULL: none is
 * replaced). A subject that needs a cluster the principal lacks is left
 * out: a relay registered before relays had one gets no consumer at all.
 */
static void
add_list(sbuf *b, const char *key, const char *const *subjects,
         const lark_principal *p) {
  int first = 1;
  sb_printf(b, "          %s: [", key);
  for (size_t i = 0; subjects[i]; i++) {
    const char *s = subjects[i];
    if (p && strstr(s, "%c") && !p->cluster[0])
      continue;
    sb_add(b, first ? "\"" : ", \"");
    first = 0;
    for (const char *at; p && (at = strchr(s, '%'));) {
      const char *v = at[1] == 's'   ? p->name
                      : at[1] == 'k' ? p->pub
                      : at[1] == 'c' ? p->cluster
                                     : NULL;
      sb_addn(b, s, (size_t)(at - s) + (v ? 0 : 1));
      if (v)
        sb_add(b, v);
      s = at + (v ? 2 : 1);
    }
    sb_add(b, s);
    sb_add(b, "\"");
  }
  sb_add(b, "]\n");
}

/* Services: their own streams and the JetStream API; commands and status
 * requests in; replies through allow_responses, and their own replies
 * under _INBOX_<their key> (bus_conn_open sets that prefix). Consumers,
 * acks and flow control are the services' alone: no other role may
 * publish a $JS.API.CONSUMER.* subject that names one of theirs, nor
 * $JS.ACK or $JS.FC of a stream they read. */
static const char *const svc_pub[] = {
    "lark.ev.>",  "lark.run.>", "lark.node.>", "lark.log.>", "lark.route.>",
    "lark.sys.>", "$JS.API.>",  "$JS.ACK.>",   "$JS.FC.>",   NULL};
static const char *const svc_sub[] = {"lark.cmd.*.>", "lark.sys.>",
                                      "_INBOX_%k.>", NULL};

/* Users: commands and run reports as themselves, status requests, and
 * what `larkctl tail/get/describe` need to read LARK_EVENTS and
 * LARK_RUNS: stream metadata and batch direct gets, which need no
 * consumer. A user makes no consumer at all: server 2.15 does not check
 * a push consumer's deliver subject against its creator's permissions,
 * so any create would let it publish the stream into a subject it may
 * not (a service's command subject, say). LARK_LOGS is not readable
 * (neither is LARK_INGRESS): a user may not see other users' pods'
 * output. */
static const char *const user_pub[] = {"lark.cmd.%s.>",
                                       "lark.rep.%s.>",
                                       "lark.sys.status",
                                       "lark.sys.status.*",
                                       "$JS.API.INFO",
                                       "$JS.API.STREAM.NAMES",
                                       "$JS.API.STREAM.INFO.*",
                                       "$JS.API.DIRECT.GET.LARK_EVENTS",
                                       "$JS.API.DIRECT.GET.LARK_RUNS",
                                       NULL};
/* replies (command answers, direct gets, publish acks) come to
 * _INBOX_<the user's key> and nowhere else */
static const char *const user_sub[] = {"_INBOX_%k.>", NULL};

/* Edge nodes: docs/design.md section 6, on the node's own stream
 * LARK_NODE_<node> (bus_node_stream_name). */
static const char *const node_pub[] = {
    "lark.in.%s.>",
    "$JS.API.CONSUMER.CREATE." BUS_NODE_STREAM_PREFIX
    "%s.edge-%s.lark.node.%s.>",
    "$JS.API.CONSUMER.INFO." BUS_NODE_STREAM_PREFIX "%s.edge-%s",
    "$JS.API.CONSUMER.MSG.NEXT." BUS_NODE_STREAM_PREFIX "%s.edge-%s",
    "$JS.API.CONSUMER.DELETE." BUS_NODE_STREAM_PREFIX "%s.edge-%s",
    "$JS.ACK." BUS_NODE_STREAM_PREFIX "%s.edge-%s.>",
    NULL};
static const char *const node_pub_deny[] = {"$JS.API.STREAM.MSG.GET.>",
                                            "$JS.API.DIRECT.GET.>", NULL};
static const char *const node_sub[] = {"_INBOX_%s.>", NULL};

/* Relays (netrelay/): read-only, through ephemeral pull consumers with
 * no acks, and nothing else. Each consumer is named
 * relay-<the principal's public key> (netrelay/relay-int.h,
 * RELAY_CONSUMER_PREFIX) and created through the subject that carries
 * its name and filter, so the broker checks both: a node relay may
 * follow its own cluster's rows of LARK_ROUTES and no other, the hub
 * every cluster's routes and the cert events of LARK_EVENTS. The server
 * refuses a create whose body's filter differs from the subject's.
 * Neither may publish an event, a route or a command, read a message by
 * sequence or subject, make a durable or touch another's consumer. */
static const char *const relay_pub[] = {
    "$JS.API.CONSUMER.CREATE.LARK_ROUTES.relay-%k.lark.route.*.%c.>",
    "$JS.API.CONSUMER.INFO.LARK_ROUTES.relay-%k",
    "$JS.API.CONSUMER.MSG.NEXT.LARK_ROUTES.relay-%k",
    "$JS.API.CONSUMER.DELETE.LARK_ROUTES.relay-%k", NULL};
static const char *const hub_pub[] = {
    "$JS.API.CONSUMER.CREATE.LARK_ROUTES.relay-%k.lark.route.>",
    "$JS.API.CONSUMER.INFO.LARK_ROUTES.relay-%k",
    "$JS.API.CONSUMER.MSG.NEXT.LARK_ROUTES.relay-%k",
    "$JS.API.CONSUMER.DELETE.LARK_ROUTES.relay-%k",
    "$JS.API.CONSUMER.CREATE.LARK_EVENTS.relay-%k.lark.ev.cert.>",
    "$JS.API.CONSUMER.INFO.LARK_EVENTS.relay-%k",
    "$JS.API.CONSUMER.MSG.NEXT.LARK_EVENTS.relay-%k",
    "$JS.API.CONSUMER.DELETE.LARK_EVENTS.relay-%k",
    NULL};
/* a relay's replies come to its own inbox, _INBOX_<its key> */
static const char *const relay_sub[] = {"_INBOX_%k.>", NULL};

static void
add_user(sbuf *b, const lark_principal *p) {
  sb_printf(b, "      # %s (%s)\n      {\n        nkey: \"%s\"\n", p->name,
            lark_role_name(p->role), p->pub);
  if (p->role == LARK_ROLE_ADMIN) {
    sb_add(b, "      }\n");
    return;
  }
  sb_add(b, "        permissions: {\n");
  const char *const *pub = svc_pub, *const *sub = svc_sub;
  if (p->role == LARK_ROLE_USER)
    pub = user_pub, sub = user_sub;
  else if (p->role == LARK_ROLE_NODE)
    pub = node_pub, sub = node_sub;
  else if (p->role == LARK_ROLE_RELAY)
    pub = relay_pub, sub = relay_sub;
  else if (p->role == LARK_ROLE_RELAY_HUB)
    pub = hub_pub, sub = relay_sub;
  sb_add(b, "          publish: {\n  ");
  add_list(b, "allow", pub, p);
  if (p->role == LARK_ROLE_NODE || p->role == LARK_ROLE_RELAY ||
      p->role == LARK_ROLE_RELAY_HUB) {
    sb_add(b, "  ");
    add_list(b, "deny", node_pub_deny, NULL);
  }
  sb_add(b, "          }\n          subscribe: {\n  ");
  add_list(b, "allow", sub, p);
  sb_add(b, "          }\n");
  if (p->role == LARK_ROLE_SERVICE)
    sb_add(b, "          allow_responses: true\n");
  sb_add(b, "        }\n      }\n");
}

char *
lark_accounts_text(const lark_principal *p, size_t n) {
  sbuf b = {0};
  sb_add(&b, "# Generated by larkctl from creds/users: do not edit.\n"
             "# One account, LARK, with JetStream; every user is an "
             "explicit nkey user.\n"
             "accounts {\n  LARK {\n    jetstream: enabled\n    users: [\n");
  for (size_t i = 0; i < n; i++)
    add_user(&b, &p[i]);
  sb_add(&b, "    ]\n  }\n}\n");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

int
lark_render_accounts(const lark_principal *p, size_t n, const char *path) {
  if (n == 0)
    return cfg_fail(BUS_EINVAL, "no users: refusing to render %s", path);
  char *text = lark_accounts_text(p, n);
  if (!text)
    return -ENOMEM;
  int rc = write_atomic(path, text, strlen(text));
  free(text);
  return rc;
}

/* ------------------------------------------------------------ templates */

const char *
lark_template_dir(void) {
  static char buf[PATH_MAX];
  const char *env = getenv("LARK_BROKER_CONFIG_DIR");
  if (env && *env)
    return env;
  snprintf(buf, sizeof buf, "%s/broker-config/single.conf.in", LARK_SOURCE_DIR);
  if (access(buf, R_OK) == 0) {
    snprintf(buf, sizeof buf, "%s/broker-config", LARK_SOURCE_DIR);
    return buf;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
      *slash = 0;
    if (snprintf(buf, sizeof buf, "%s/../share/larkbus/broker-config", exe) <
        (int)sizeof buf)
      return buf;
  }
  return "broker-config";
}

void
lark_broker_opts_init(lark_broker_opts *o) {
  memset(o, 0, sizeof *o);
  o->server_name = "lark-1";
  o->listen = "127.0.0.1";
  o->port = -1;
  o->max_payload = BUS_MAX_PAYLOAD;
  o->accounts_file = "accounts.conf";
  o->cluster_name = "lark";
  o->route_user = "lark-route";
}

typedef struct var {
  const char *name;
  const char *value;
  int optional; /* no value: the line is left out */
} var;

enum { NVARS = 14 };

static int
safe_value(const char *v) {
  return !strpbrk(v, "\"\\\r");
}

static void
routes_text(const lark_broker_opts *o, sbuf *b) {
  for (size_t i = 0; i < o->n_routes; i++)
    sb_printf(b, "    \"nats-route://%s:%s@%s:%d\"%s", o->route_user,
              o->route_password ? o->route_password : "", o->listen,
              o->route_ports[i], i + 1 < o->n_routes ? "\n" : "");
}

static void
leaf_text(const lark_broker_opts *o, sbuf *b) {
  if (o->leaf_port <= 0) {
    sb_add(b, "# no leaf-node listener");
    return;
  }
  sb_printf(b,
            "leafnodes {\n  host: \"%s\"\n  port: %d\n  authorization {\n"
            "    users: [\n      { user: \"%s\", password: \"%s\", "
            "account: \"LARK\" }\n    ]\n  }\n}",
            o->listen, o->leaf_port, o->leaf_user ? o->leaf_user : "",
            o->leaf_password ? o->leaf_password : "");
}

static const char *
var_get(const var *vars, const char *name, size_t len, int *known) {
  *known = 0;
  for (size_t i = 0; i < NVARS && vars[i].name; i++)
    if (strlen(vars[i].name) == len && !strncmp(vars[i].name, name, len)) {
      *known = vars[i].optional ? 2 : 1;
      return vars[i].value;
    }
  return NULL;
}

/*
 * Copy one template line into b with its placeholders replaced. A line
 * whose placeholder is optional and has no value is left out whole.
 */
static int
subst_line(const char *line, size_t len, const var *vars, sbuf *b) {
  const char *p = line, *end = line + len;
  size_t start = b->len;
  while (p < end) {
    const char *at = memchr(p, '@', (size_t)(end - p));
    const char *close = at ? memchr(at + 1, '@', (size_t)(end - at - 1)) : 0;
    if (!close) {
      sb_addn(b, p, (size_t)(end - p));
      break;
    }
    sb_addn(b, p, (size_t)(at - p));
    int known;
    size_t nlen = (size_t)(close - at - 1);
    const char *v = var_get(vars, at + 1, nlen, &known);
    if (known == 2 && !v) {
      b->len = start;
      if (b->p)
        b->p[start] = 0;
      return 0;
    }
    if (!known || !v)
      return cfg_fail(BUS_EINVAL, "%s placeholder @%.*s@",
                      known ? "no value for" : "unknown", (int)nlen, at + 1);
    sb_add(b, v);
    p = close + 1;
  }
  return 0;
}

static int
subst(const char *text, const var *vars, sbuf *b) {
  for (const char *line = text; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
    size_t skip = strspn(line, " \t");
    int rc = 0;
    if (line[skip] == '#')
      sb_addn(b, line, len);
    else
      rc = subst_line(line, len, vars, b);
    if (rc < 0)
      return rc;
    line += len;
  }
  return b->oom ? -ENOMEM : 0;
}

static int
check_values(const var *vars) {
  for (size_t i = 0; i < NVARS && vars[i].name; i++) {
    const char *v = vars[i].value;
    if (v && strcmp(vars[i].name, "ROUTES") &&
        strcmp(vars[i].name, "LEAFNODES") && !safe_value(v))
      return cfg_fail(BUS_EINVAL,
                      "value of %s has a quote, backslash or "
                      "carriage return",
                      vars[i].name);
  }
  return 0;
}

int
lark_render_conf(const char *name, const lark_broker_opts *o,
                 const char *path) {
  char tpath[PATH_MAX], port[24], cport[24], payload[24];
  char *text = NULL;
  sbuf routes = {0}, leaf = {0}, out = {0};
  const char *dir = o->template_dir ? o->template_dir : lark_template_dir();
  snprintf(tpath, sizeof tpath, "%s/%s.conf.in", dir, name);
  int rc = read_all(tpath, &text, NULL);
  if (rc < 0) {
    rc = cfg_fail(rc,
                  "cannot read template %s: %s (set "
                  "LARK_BROKER_CONFIG_DIR)",
                  tpath, strerror(-rc));
    goto out;
  }
  snprintf(port, sizeof port, "%d", o->port);
  snprintf(cport, sizeof cport, "%d", o->cluster_port);
  snprintf(payload, sizeof payload, "%ld", o->max_payload);
  routes_text(o, &routes);
  leaf_text(o, &leaf);
  const var vars[NVARS] = {
      {"SERVER_NAME", o->server_name, 0},
      {"LISTEN", o->listen, 0},
      {"PORT", port, 0},
      {"MAX_PAYLOAD", payload, 0},
      {"STORE_DIR", o->store_dir, 1},
      {"RUN_DIR", o->run_dir, 0},
      {"ACCOUNTS_FILE", o->accounts_file, 0},
      {"LEAFNODES", leaf.p, 0},
      {"CLUSTER_NAME", o->cluster_name, 0},
      {"CLUSTER_PORT", o->cluster_port > 0 ? cport : NULL, 0},
      {"ROUTE_USER", o->route_user, 0},
      {"ROUTE_PASSWORD", o->route_password, 0},
      {"ROUTES", o->n_routes ? routes.p : NULL, 0},
      {"HUB_URL", o->hub_url, 0},
  };
  if ((rc = check_values(vars)) < 0 || (rc = subst(text, vars, &out)) < 0)
    goto out;
  rc = write_atomic(path, out.p, out.len);
out:
  free(text);
  free(routes.p);
  free(leaf.p);
  if (out.p)
    sodium_memzero(out.p, out.len);
  free(out.p);
  return rc;
}

void
lark_random_password(char out[33]) {
  unsigned char raw[16];
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(out, 33, raw, sizeof raw);
  sodium_memzero(raw, sizeof raw);
}

int
lark_parse_duration(const char *s, int64_t *ns) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || v < 0)
    return -1;
  static const struct {
    const char *unit;
    double ns;
  } units[] = {
      {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(end, units[i].unit)) {
      if (v * units[i].ns > 9.2e18)
        return -1;
      *ns = (int64_t)(v * units[i].ns);
      return 0;
    }
  return -1;
}

/* -------------------------------------------------------------- streams */

int
lark_stream_info(bus_conn *c, const char *name, unsigned long long *messages,
                 int *replicas, char **config_json) {
  char subj[160];
  void *reply = NULL;
  size_t len = 0;
  json_t *j = NULL;
  snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
  int rc = bus_conn_request(c, subj, "", 0, 5000, &reply, &len);
  if (rc < 0)
    return cfg_fail(rc, "stream info %s: %s", name, bus_last_error());
  json_error_t jerr;
  j = json_loadb(reply, len, 0, &jerr);
  json_t *err = j ? json_object_get(j, "error") : NULL;
  json_t *cfg = j ? json_object_get(j, "config") : NULL;
  if (err) {
    json_int_t code = json_integer_value(json_object_get(err, "code"));
    rc = cfg_fail(code == 404 ? BUS_ENOT_FOUND : BUS_EBROKER, "%s: %s", name,
                  json_string_value(json_object_get(err, "description")));
    goto out;
  }
  if (!cfg) {
    rc = cfg_fail(BUS_EMALFORMED, "stream info %s: unexpected reply", name);
    goto out;
  }
  json_t *state = json_object_get(j, "state");
  if (messages)
    *messages = (unsigned long long)json_integer_value(
        json_object_get(state, "messages"));
  if (replicas)
    *replicas = (int)json_integer_value(json_object_get(cfg, "num_replicas"));
  if (config_json)
    *config_json = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
out:
  json_decref(j);
  free(reply);
  return rc;
}

int
lark_streams_init(bus_conn *c, const bus_streams_opts *o,
                  lark_stream_report *reports, size_t cap, size_t *n) {
  char *before[16] = {0};
  size_t count = 0;
  int rc = 0;
  for (; bus_stream_names[count] && count < cap && count < 16; count++) {
    rc = lark_stream_info(c, bus_stream_names[count], NULL, NULL,
                          &before[count]);
    if (rc < 0 && rc != BUS_ENOT_FOUND)
      goto out;
  }
  rc = bus_streams_ensure(c, o);
  if (rc < 0) {
    cfg_fail(rc, "%s", bus_last_error());
    goto out;
  }
  for (size_t i = 0; i < count; i++) {
    char *after = NULL;
    lark_stream_report *r = &reports[i];
    memset(r, 0, sizeof *r);
    r->name = bus_stream_names[i];
    rc = lark_stream_info(c, r->name, &r->messages, &r->replicas, &after);
    if (rc < 0)
      goto out;
    r->outcome = !before[i]                 ? LARK_STREAM_CREATED
                 : strcmp(before[i], after) ? LARK_STREAM_UPDATED
                                            : LARK_STREAM_UNCHANGED;
    free(after);
  }
  *n = count;
out:
  for (size_t i = 0; i < count; i++)
    free(before[i]);
  return rc;
}

/* ------------------------------------------------------ the data dir */

int
lark_data_path(const char *data, const char *sub, char *out, size_t cap) {
  if (snprintf(out, cap, "%s/%s", data, sub) >= (int)cap)
    return cfg_fail(BUS_EINVAL, "path too long under %s", data);
  return 0;
}

int
lark_regen_accounts(const char *data) {
  char dir[PATH_MAX], path[PATH_MAX];
  lark_principal *p = NULL;
  size_t n = 0;
  int rc = lark_data_path(data, "broker", dir, sizeof dir);
  if (rc < 0 || (rc = lark_mkdirs(dir, 0700)) < 0)
    return rc;
  if (snprintf(path, sizeof path, "%s/accounts.conf", dir) >= (int)sizeof path)
    return cfg_fail(BUS_EINVAL, "path too long under %s", data);
  rc = lark_creds_load(data, &p, &n);
  if (rc == 0)
    rc = lark_render_accounts(p, n, path);
  free(p);
  return rc;
}

/* 1 if pid is a live nats-server process. */
static int
is_nats_server(pid_t pid) {
  char path[64], comm[64] = "";
  snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  int ok = fgets(comm, sizeof comm, f) != NULL;
  fclose(f);
  comm[strcspn(comm, "\n")] = 0;
  return ok && !strcmp(comm, "nats-server");
}

static pid_t
read_pid(const char *path) {
  FILE *f = fopen(path, "re");
  long pid = 0;
  if (!f)
    return 0;
  if (fscanf(f, "%ld", &pid) != 1)
    pid = 0;
  fclose(f);
  return (pid_t)pid;
}

int
lark_reload_servers(const char *data, int *count) {
  char run[PATH_MAX], path[PATH_MAX + 64];
  int n = 0;
  int rc = lark_data_path(data, "run", run, sizeof run);
  if (rc < 0)
    return rc;
  for (int i = 1; i <= 3; i++) {
    snprintf(path, sizeof path, "%s/lark-%d.pid", run, i);
    pid_t pid = read_pid(path);
    if (pid <= 0 || !is_nats_server(pid))
      continue;
    if (kill(pid, SIGHUP) < 0)
      return cfg_fail(-errno, "cannot signal nats-server %d: %s", (int)pid,
                      strerror(errno));
    n++;
  }
  if (count)
    *count = n;
  return 0;
}

int
lark_bin_dir(char *out, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return cfg_fail(-errno, "cannot read /proc/self/exe: %s", strerror(errno));
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = 0;
  if (snprintf(out, cap, "%s", exe) >= (int)cap)
    return cfg_fail(BUS_EINVAL, "path too long: %s", exe);
  return 0;
}

int
lark_bin_exists(const char *bin_dir, const char *name) {
  char path[PATH_MAX];
  struct stat st;
  if (snprintf(path, sizeof path, "%s/%s", bin_dir, name) >= (int)sizeof path)
    return 0;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}
