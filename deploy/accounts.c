/*
 * accounts.c - the broker's accounts file, rendered from the policy table
 * (policy.c) and the registry, and how a running nats-server is found
 * from its pid file (regen.c renders everything again and reloads).
 *
 * Invariants:
 * - Every principal becomes an explicit nkey user of the LARK account and
 *   nothing else is rendered: no authorization block, no no_auth_user, so
 *   the broker refuses anonymous clients (CVE-2023-47090).
 * - The permissions come from lark_policy alone, rows in table order; the
 *   only text that varies is a principal's name (checked by
 *   bus_name_valid: one subject token, safe inside quotes), its public key
 *   (base32, checked on load) and a relay's cluster (a name).
 * - A role with no row at all gets empty lists: it may do nothing.
 * - A site (its leaf connection) gets the node rows once for each of its
 *   nodes (the principals of role node whose site it is); a site with no
 *   node gets a deny of everything, as an empty allow list would allow
 *   all.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "deploy-int.h"

/* The role whose rows a principal of role gets: a site its nodes'. */
static lark_role
rows_of(lark_role role) {
  return role == LARK_ROLE_SITE ? LARK_ROLE_NODE : role;
}

static int
role_has(lark_role role, lark_perm perm) {
  role = rows_of(role);
  for (size_t i = 0; i < lark_policy_len; i++)
    if (lark_policy[i].role == role && lark_policy[i].perm == perm)
      return 1;
  return 0;
}

/* s with %s, %k and %c replaced by p's name, key and cluster. */
static void
add_subject(sbuf *b, const char *s, const lark_principal *p) {
  for (const char *at; (at = strchr(s, '%'));) {
    const char *v = at[1] == 's'   ? p->name
                    : at[1] == 'k' ? p->pub
                    : at[1] == 'c' ? p->cluster
                                   : NULL;
    dpl_sb_addn(b, s, (size_t)(at - s) + (v ? 0 : 1));
    if (v)
      dpl_sb_add(b, v);
    s = at + (v ? 2 : 1);
  }
  dpl_sb_add(b, s);
}

/* The principal a row is rendered for: p, or for a site's row naming a
 * node (%s), the k-th node of site p in all[0..n); NULL past the last. */
static const lark_principal *
row_subject_of(const lark_rule *r, const lark_principal *p,
               const lark_principal *all, size_t n, size_t k) {
  if (p->role != LARK_ROLE_SITE || !strstr(r->subject, "%s"))
    return k == 0 ? p : NULL;
  for (size_t i = 0; i < n; i++)
    if (all[i].role == LARK_ROLE_NODE && !strcmp(all[i].site, p->name) &&
        k-- == 0)
      return &all[i];
  return NULL;
}

/* `key: ["subject", ...]`: the rows of p's role that grant perm; all[0..n)
 * is the registry (a site's rows name its nodes). */
static void
add_list(sbuf *b, const char *key, lark_perm perm, const lark_principal *p,
         const lark_principal *all, size_t n) {
  int first = 1;
  dpl_sb_printf(b, "          %s: [", key);
  for (size_t i = 0; i < lark_policy_len; i++) {
    const lark_rule *r = &lark_policy[i];
    const lark_principal *who;
    if (r->role != rows_of(p->role) || r->perm != perm || !r->subject)
      continue;
    if (strstr(r->subject, "%c") && !p->cluster[0])
      continue;
    for (size_t k = 0; (who = row_subject_of(r, p, all, n, k)); k++) {
      dpl_sb_add(b, first ? "\"" : ", \"");
      first = 0;
      add_subject(b, r->subject, who);
      dpl_sb_add(b, "\"");
    }
  }
  dpl_sb_add(b, "]\n");
}

/* 1 if p is a site none of whose nodes is in all[0..n). */
static int
empty_site(const lark_principal *p, const lark_principal *all, size_t n) {
  for (size_t i = 0; p->role == LARK_ROLE_SITE && i < n; i++)
    if (all[i].role == LARK_ROLE_NODE && !strcmp(all[i].site, p->name))
      return 0;
  return p->role == LARK_ROLE_SITE;
}

static void
add_user(sbuf *b, const lark_principal *p, const lark_principal *all,
         size_t n) {
  dpl_sb_printf(b, "      # %s (%s)\n      {\n        nkey: \"%s\"\n", p->name,
                lark_role_name(p->role), p->pub);
  if (role_has(p->role, LARK_PERM_ALL)) {
    dpl_sb_add(b, "      }\n");
    return;
  }
  dpl_sb_add(b, "        permissions: {\n");
  if (empty_site(p, all, n)) {
    dpl_sb_add(b, "          publish: { deny: [\">\"] }\n"
                  "          subscribe: { deny: [\">\"] }\n        }\n"
                  "      }\n");
    return;
  }
  dpl_sb_add(b, "          publish: {\n  ");
  add_list(b, "allow", LARK_PUB_ALLOW, p, all, n);
  if (role_has(p->role, LARK_PUB_DENY)) {
    dpl_sb_add(b, "  ");
    add_list(b, "deny", LARK_PUB_DENY, p, all, n);
  }
  dpl_sb_add(b, "          }\n          subscribe: {\n  ");
  add_list(b, "allow", LARK_SUB_ALLOW, p, all, n);
  dpl_sb_add(b, "          }\n");
  if (role_has(p->role, LARK_RESPONSES))
    dpl_sb_add(b, "          allow_responses: true\n");
  dpl_sb_add(b, "        }\n      }\n");
}

/* A site's server with no node: its one user is the site's own key with
 * no rights (a fresh key when the registry has none). nats-server with no
 * user configured takes anonymous clients, and keeps connections a reload
 * removed the last user of. */
static void
add_site_guard(sbuf *b, const char *site, const lark_principal *p, size_t n) {
  lark_principal g;
  char seed[BUS_NKEY_SEED_LEN + 1];
  memset(&g, 0, sizeof g);
  for (size_t i = 0; i < n && !g.pub[0]; i++)
    if (p[i].role == LARK_ROLE_SITE && !strcmp(p[i].name, site))
      g = p[i];
  if (!g.pub[0] && bus_nkey_create(seed, g.pub) < 0)
    return;
  sodium_memzero(seed, sizeof seed);
  snprintf(g.name, sizeof g.name, "%s", site);
  g.role = LARK_ROLE_SITE;
  add_user(b, &g, &g, 0); /* a site without nodes: deny everything */
}

char *
lark_accounts_text(const lark_principal *p, size_t n) {
  return dpl_accounts_text(p, n, NULL);
}

char *
dpl_accounts_text(const lark_principal *p, size_t n, const char *site) {
  sbuf b = {0};
  if (site)
    dpl_sb_printf(&b,
                  "# Generated by larkctl for edge site %s: do not edit.\n"
                  "# One account, LARK, without JetStream (the hub's "
                  "serves it over the leaf connection);\n# one explicit "
                  "nkey user per node of the site, with the hub's "
                  "rules.\naccounts {\n  LARK {\n    users: [\n",
                  site);
  else
    dpl_sb_add(&b, "# Generated by larkctl from creds/users: do not edit.\n"
                   "# One account, LARK, with JetStream; every user is an "
                   "explicit nkey user.\n"
                   "accounts {\n  LARK {\n    jetstream: enabled\n    "
                   "users: [\n");
  size_t users = 0;
  for (size_t i = 0; i < n; i++)
    if (!site || (p[i].role == LARK_ROLE_NODE && !strcmp(p[i].site, site))) {
      add_user(&b, &p[i], p, n);
      users++;
    }
  if (site && !users) /* no user at all would let anyone in: the site's
                         own key, allowed nothing, holds the door */
    add_site_guard(&b, site, p, n);
  dpl_sb_add(&b, "    ]\n  }\n}\n");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

int
lark_render_accounts(const lark_principal *p, size_t n, const char *path) {
  if (n == 0)
    return dpl_fail(BUS_EINVAL, "no users: refusing to render %s", path);
  char *text = lark_accounts_text(p, n);
  if (!text)
    return -ENOMEM;
  int rc = dpl_write_atomic(path, text, strlen(text));
  free(text);
  return rc;
}

/* ------------------------------------------------------------- reload */

/* 1 if pid is a live nats-server process. */
int
dpl_is_nats_server(pid_t pid) {
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

pid_t
dpl_read_pid(const char *path) {
  FILE *f = fopen(path, "re");
  long pid = 0;
  if (!f)
    return 0;
  if (fscanf(f, "%ld", &pid) != 1)
    pid = 0;
  fclose(f);
  return (pid_t)pid;
}
