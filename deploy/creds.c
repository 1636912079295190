/*
 * creds.c - the credentials registry: one nkey seed file per principal
 * under <data>/creds, and creds/users naming each principal's role and
 * public key (a node relay's cluster after it).
 *
 * Invariants:
 * - A seed file, once written, is never replaced: re-running `larkctl up`
 *   or `node add` keeps every key. Only `node rotate` (lark_creds_rotate)
 *   writes a new one, and `delete node` (lark_creds_remove) removes it
 *   after its registry line. The registry (creds/users) is rewritten
 *   whole through a temporary file and rename, under an flock on
 *   creds/.lock, so concurrent larkctl runs never lose a line.
 * - A line is read only when its name is a name, its role known, its key
 *   a user's nkey in base32, and a cluster only a relay's: what the
 *   accounts file puts into subjects is checked here.
 * - Seeds are wiped from memory (sodium_memzero) as soon as they are used.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "deploy-int.h"

int
lark_creds_path(const char *data, const char *name, char *out, size_t cap) {
  if (snprintf(out, cap, "%s/creds/%s.nk", data, name) >= (int)cap)
    return dpl_fail(BUS_EINVAL, "path too long under %s", data);
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
    return dpl_fail(BUS_EINVAL, "path too long under %s", data);
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
  rc = dpl_read_all(path, &text, NULL);
  if (rc == -ENOENT)
    return 0;
  if (rc < 0)
    return dpl_fail(rc, "cannot read %s: %s", path, strerror(-rc));
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
      rc = dpl_fail(BUS_EMALFORMED, "%s:%zu: expected <name> <role> <key>",
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
  dpl_sb_add(&b, "# larkbus principals: name role public-key [cluster] "
                 "(seeds in <name>.nk; written by larkctl)\n");
  for (size_t i = 0; i < n; i++)
    if (lark_role_name(p[i].role)) /* an unknown role is not written */
      dpl_sb_printf(&b, "%s %s %s%s%s\n", p[i].name, lark_role_name(p[i].role),
                    p[i].pub, p[i].cluster[0] ? " " : "", p[i].cluster);
  rc = b.oom ? -ENOMEM : dpl_write_atomic(path, b.p, b.len);
  free(b.p);
  return rc;
}

/* Find the "SU..." seed in a creds file, whatever its layout. */
static int
seed_from_file(const char *path, char seed[BUS_NKEY_SEED_LEN + 1]) {
  char *text = NULL;
  size_t len = 0;
  int rc = dpl_read_all(path, &text, &len);
  if (rc < 0)
    return dpl_fail(rc, "cannot read %s: %s", path, strerror(-rc));
  rc = dpl_fail(BUS_EAUTH, "no nkey seed in %s", path);
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

int
dpl_seed_read(const char *path, char seed[BUS_NKEY_SEED_LEN + 1]) {
  return seed_from_file(path, seed);
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
      dpl_fail(rc, "bad nkey seed in %s: %s", path, bus_last_error());
    goto out;
  }
  rc = bus_nkey_create(seed, pub);
  if (rc < 0) {
    dpl_fail(rc, "cannot create a nkey: %s", bus_last_error());
    goto out;
  }
  rc = bus_nkey_write(path, seed);
  if (rc < 0) {
    dpl_fail(rc, "cannot write %s: %s", path, bus_last_error());
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
    return dpl_fail(BUS_EINVAL, "path too long under %s", data);
  int rc = lark_mkdirs(dir, 0700);
  if (rc < 0)
    return rc;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return dpl_fail(-errno, "cannot open %s: %s", path, strerror(errno));
  if (flock(fd, LOCK_EX) < 0) {
    rc = dpl_fail(-errno, "cannot lock %s: %s", path, strerror(errno));
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
    rc = dpl_fail(BUS_EEXISTS, "%s is already registered as a %s", p->name,
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
    return dpl_fail(BUS_EINVAL, "relay %s needs its cluster", name);
  return creds_ensure(data, name, role, "", out, created);
}

int
lark_creds_ensure_relay(const char *data, const char *name, const char *cluster,
                        lark_principal *out, int *created) {
  if (!bus_name_valid(cluster, BUS_NAME_MAX))
    return dpl_fail(BUS_ENAME, "invalid cluster '%s': use a-z, 0-9 and '-'",
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
    return dpl_fail(BUS_ENAME, "invalid name '%s': use a-z, 0-9 and '-'", name);
  if (!lark_role_name(role))
    return dpl_fail(BUS_EINVAL, "unknown role %d", (int)role);
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

/* ------------------------------------------------ decommission, rotate */

/* The index of name in v[0..n) as a principal of role; BUS_ENOT_FOUND
 * when absent, BUS_EINVAL when it is another role's. */
static int
find_as(const lark_principal *v, size_t n, const char *name, lark_role role,
        size_t *at) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].name, name))
      continue;
    if (v[i].role != role)
      return dpl_fail(BUS_EINVAL, "%s is a %s, not a %s", name,
                      lark_role_name(v[i].role), lark_role_name(role));
    *at = i;
    return 0;
  }
  return dpl_fail(BUS_ENOT_FOUND, "no %s %s in the registry",
                  lark_role_name(role), name);
}

/* The registry locked and loaded, one principal found in it. */
typedef struct held {
  char path[PATH_MAX]; /* its seed file */
  lark_principal *v;   /* the registry */
  size_t n, at;        /* v[at] is the principal */
  int lock;            /* creds/.lock's descriptor, or negative */
} held;

/* Lock the registry and find name as role in it; release h in every
 * case. */
static int
hold(const char *data, const char *name, lark_role role, held *h) {
  memset(h, 0, sizeof *h);
  h->lock = -1;
  if (!bus_name_valid(name, BUS_NAME_MAX))
    return dpl_fail(BUS_ENAME, "invalid name '%s': use a-z, 0-9 and '-'", name);
  int rc = lark_creds_path(data, name, h->path, sizeof h->path);
  if (rc < 0 || (h->lock = lock_creds(data)) < 0)
    return rc < 0 ? rc : h->lock;
  rc = lark_creds_load(data, &h->v, &h->n);
  return rc ? rc : find_as(h->v, h->n, name, role, &h->at);
}

static void
release(held *h) {
  if (h->lock >= 0)
    close(h->lock);
  free(h->v);
}

int
lark_creds_remove(const char *data, const char *name, lark_role role,
                  int *removed) {
  held h;
  *removed = 0;
  int rc = hold(data, name, role, &h);
  if (rc == 0) {
    memmove(&h.v[h.at], &h.v[h.at + 1], (h.n - h.at - 1) * sizeof *h.v);
    rc = registry_write(data, h.v, h.n - 1);
    *removed = rc == 0;
  }
  /* the line first: a seed left behind gives nothing, a line without
   * its seed would still let its key in */
  if ((rc == 0 || rc == BUS_ENOT_FOUND) && unlink(h.path) < 0 &&
      errno != ENOENT)
    rc = dpl_fail(-errno, "cannot remove %s: %s", h.path, strerror(errno));
  release(&h);
  return rc == BUS_ENOT_FOUND ? 0 : rc;
}

int
lark_creds_rotate(const char *data, const char *name, lark_role role,
                  lark_principal *out, char old_pub[BUS_NKEY_PUB_LEN + 1]) {
  char seed[BUS_NKEY_SEED_LEN + 1];
  held h;
  int rc = hold(data, name, role, &h);
  lark_principal *p = rc ? NULL : &h.v[h.at];
  if (p && old_pub)
    memcpy(old_pub, p->pub, BUS_NKEY_PUB_LEN + 1);
  if (p && (rc = bus_nkey_create(seed, p->pub)) < 0)
    dpl_fail(rc, "cannot create a nkey: %s", bus_last_error());
  /* the seed replaced whole (written aside, renamed), then its line: a
   * crash between them is mended by the next ensure, which derives the
   * key from the seed file */
  if (p && rc == 0 && (rc = bus_nkey_write(h.path, seed)) < 0)
    dpl_fail(rc, "cannot write %s: %s", h.path, bus_last_error());
  if (p && rc == 0)
    rc = registry_write(data, h.v, h.n);
  if (p && rc == 0 && out)
    *out = *p;
  sodium_memzero(seed, sizeof seed);
  release(&h);
  return rc;
}
