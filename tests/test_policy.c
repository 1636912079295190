/*
 * test_policy.c - the broker permissions rendered from the policy table
 * (deploy/policy.c) are, role by role, the ones larkctl rendered before
 * the table existed: tests/data/policy/accounts.conf was written by that
 * code for one principal of each role (a relay with a cluster and one
 * without). The comparison is by meaning: each user's sets of allowed
 * and denied publish subjects, allowed subscribe subjects, and whether
 * it may answer requests; order and layout are free.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy.h"

enum { MAX_USERS = 16, MAX_SUBJ = 32 };

typedef struct perms {
  char key[BUS_NKEY_PUB_LEN + 1];
  int all; /* no permissions block */
  int responses;
  char *lists[3][MAX_SUBJ]; /* publish allow, publish deny, subscribe allow */
  size_t n[3];
} perms;

static int
cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The quoted subjects of one `allow: [...]` or `deny: [...]` line. */
static void
parse_list(const char *line, perms *u, int which) {
  for (const char *p = strchr(line, '"'); p; p = strchr(p, '"')) {
    const char *end = strchr(p + 1, '"');
    cr_assert(end && u->n[which] < MAX_SUBJ);
    u->lists[which][u->n[which]++] = strndup(p + 1, (size_t)(end - p - 1));
    p = end + 1;
  }
  qsort(u->lists[which], u->n[which], sizeof(char *), cmp_str);
}

/* The accounts text into one perms per user, in file order. */
static size_t
parse_accounts(char *text, perms *users) {
  size_t n = 0;
  int section = -1, in_perms = 0; /* 0 publish, 2 subscribe */
  char *save = NULL;
  for (char *l = strtok_r(text, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    l += strspn(l, " ");
    if (!strncmp(l, "nkey: \"", 7)) {
      cr_assert(n < MAX_USERS);
      memset(&users[n], 0, sizeof users[n]);
      snprintf(users[n].key, sizeof users[n].key, "%.56s", l + 7);
      users[n++].all = 1;
      in_perms = 0;
    } else if (!strncmp(l, "permissions:", 12)) {
      users[n - 1].all = 0;
      in_perms = 1;
    } else if (in_perms && !strncmp(l, "publish:", 8)) {
      section = 0;
    } else if (in_perms && !strncmp(l, "subscribe:", 10)) {
      section = 2;
    } else if (in_perms && !strncmp(l, "allow:", 6)) {
      parse_list(l, &users[n - 1], section);
    } else if (in_perms && !strncmp(l, "deny:", 5)) {
      cr_assert_eq(section, 0, "a subscribe deny list");
      parse_list(l, &users[n - 1], 1);
    } else if (in_perms && !strcmp(l, "allow_responses: true")) {
      users[n - 1].responses = 1;
    }
  }
  return n;
}

static char *
read_file(const char *path) {
  FILE *f = fopen(path, "r");
  cr_assert(f, "cannot read %s", path);
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strdup(buf);
}

/* The principals the recorded file was rendered for. */
static size_t
principals(lark_principal *p) {
  static const struct {
    const char *name;
    lark_role role;
    const char *cluster;
  } who[] = {{"admin", LARK_ROLE_ADMIN, ""},
             {"lark-scheduler", LARK_ROLE_SERVICE, ""},
             {"alice", LARK_ROLE_USER, ""},
             {"gpu-7", LARK_ROLE_NODE, ""},
             {"relay-node-1", LARK_ROLE_RELAY, "c1"},
             {"relay-old", LARK_ROLE_RELAY, ""},
             {"relay-hub", LARK_ROLE_RELAY_HUB, ""}};
  size_t n = sizeof who / sizeof who[0];
  memset(p, 0, n * sizeof *p);
  for (size_t i = 0; i < n; i++) {
    snprintf(p[i].name, sizeof p[i].name, "%s", who[i].name);
    p[i].role = who[i].role;
    snprintf(p[i].cluster, sizeof p[i].cluster, "%s", who[i].cluster);
    p[i].pub[0] = 'U';
    memset(p[i].pub + 1, 'A' + (int)i, BUS_NKEY_PUB_LEN - 1);
    p[i].pub[BUS_NKEY_PUB_LEN] = 0;
  }
  return n;
}

Test(policy, same_permissions_per_role_as_recorded) {
  lark_principal p[8];
  size_t np = principals(p);
  char path[1024];
  const char *src = getenv("LARK_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/data/policy/accounts.conf",
           src ? src : ".");
  char *want_text = read_file(path), *got_text = lark_accounts_text(p, np);
  cr_assert_not_null(got_text);
  perms want[MAX_USERS], got[MAX_USERS];
  size_t nw = parse_accounts(want_text, want),
         ng = parse_accounts(got_text, got);
  cr_assert_eq(nw, np);
  cr_assert_eq(ng, np);
  for (size_t u = 0; u < np; u++) {
    const char *who = p[u].name;
    cr_assert_str_eq(got[u].key, want[u].key, "%s", who);
    cr_assert_eq(got[u].all, want[u].all, "%s: everything or not", who);
    cr_assert_eq(got[u].responses, want[u].responses, "%s: responses", who);
    for (int l = 0; l < 3; l++) {
      cr_assert_eq(got[u].n[l], want[u].n[l], "%s: list %d has %zu, not %zu",
                   who, l, got[u].n[l], want[u].n[l]);
      for (size_t i = 0; i < got[u].n[l]; i++) {
        cr_assert_str_eq(got[u].lists[l][i], want[u].lists[l][i], "%s", who);
        free(got[u].lists[l][i]);
        free(want[u].lists[l][i]);
      }
    }
  }
  free(want_text);
  free(got_text);
}

/* Every row of the table says why it is there and names a known role. */
Test(policy, every_row_has_a_reason) {
  cr_assert_gt(lark_policy_len, 0);
  for (size_t i = 0; i < lark_policy_len; i++) {
    const lark_rule *r = &lark_policy[i];
    cr_assert_not_null(lark_role_name(r->role), "row %zu", i);
    cr_assert(r->why && strlen(r->why) > 10, "row %zu has no reason", i);
    int needs_subject = r->perm != LARK_PERM_ALL && r->perm != LARK_RESPONSES;
    cr_assert_eq(r->subject != NULL, needs_subject, "row %zu", i);
  }
}

/* Whether NATS subject pattern pat (with * and >) matches subject s. */
static int
subject_matches(const char *pat, const char *s) {
  while (*pat && *s) {
    const char *pe = strchr(pat, '.'), *se = strchr(s, '.');
    size_t pl = pe ? (size_t)(pe - pat) : strlen(pat);
    size_t sl = se ? (size_t)(se - s) : strlen(s);
    if (pl == 1 && *pat == '>')
      return 1;
    if (!(pl == 1 && *pat == '*') && (pl != sl || strncmp(pat, s, pl)))
      return 0;
    pat += pl + (pe != NULL);
    s += sl + (se != NULL);
    if (!pe || !se)
      return !pe && !se;
  }
  return !*pat && !*s;
}

/* lark.dev.<node>.> carries an operator's device requests: admin alone
 * publishes there, a node subscribes to its own and answers. */
Test(policy, only_admin_publishes_device_requests) {
  const char *ask = "lark.dev.gpu-7.camera.wrist.capture";
  cr_assert(subject_matches("lark.dev.%s.>", "lark.dev.%s.camera.c.capture"));
  cr_assert(!subject_matches("lark.in.%s.>", ask));
  int node_sub = 0, node_responses = 0;
  for (size_t i = 0; i < lark_policy_len; i++) {
    const lark_rule *r = &lark_policy[i];
    if (r->perm == LARK_PUB_ALLOW)
      cr_assert(!subject_matches(r->subject, ask), "%s may publish %s",
                lark_role_name(r->role), r->subject);
    if (r->role == LARK_ROLE_NODE && r->perm == LARK_SUB_ALLOW &&
        !strcmp(r->subject, "lark.dev.%s.>"))
      node_sub = 1;
    if (r->role == LARK_ROLE_NODE && r->perm == LARK_RESPONSES)
      node_responses = 1;
  }
  cr_assert(node_sub, "a node subscribes to lark.dev.<node>.>");
  cr_assert(node_responses, "a node answers requests");
}

/* s with %s as name into out. */
static void
subst_name(const char *s, const char *name, char *out, size_t cap) {
  size_t n = 0;
  for (; *s && n + 1 < cap; s++) {
    if (s[0] == '%' && s[1] == 's') {
      n += (size_t)snprintf(out + n, cap - n, "%s", name);
      s++;
    } else {
      out[n++] = *s;
    }
  }
  out[n < cap ? n : cap - 1] = 0;
}

/* lark.cmd.<user>.> names the actor: the gateway alone (and the admin,
 * who has everything) publishes for a user other than itself. */
Test(policy, only_the_gateway_acts_for_others) {
  const char *other = "lark.cmd.bob.job.apply";
  int gateway = 0;
  for (size_t i = 0; i < lark_policy_len; i++) {
    const lark_rule *r = &lark_policy[i];
    char subj[256];
    if (r->perm != LARK_PUB_ALLOW)
      continue;
    subst_name(r->subject, "alice", subj, sizeof subj);
    int acts = subject_matches(subj, other);
    cr_assert(!acts || r->role == LARK_ROLE_GATEWAY, "%s may publish %s",
              lark_role_name(r->role), r->subject);
    gateway |= acts;
  }
  cr_assert(gateway, "the gateway publishes other users' commands");
  int admin_denied = 0;
  for (size_t i = 0; i < lark_policy_len; i++)
    admin_denied |=
        lark_policy[i].role == LARK_ROLE_GATEWAY &&
        lark_policy[i].perm == LARK_PUB_DENY &&
        subject_matches(lark_policy[i].subject, "lark.cmd.admin.cert.sign");
  cr_assert(admin_denied, "but never as the admin");
  lark_role r;
  cr_assert_eq(lark_role_parse("gateway", &r), 0);
  cr_assert_eq(r, LARK_ROLE_GATEWAY);
  cr_assert_str_eq(lark_role_name(LARK_ROLE_GATEWAY), "gateway");
}
