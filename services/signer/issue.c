/*
 * issue.c - what a request may ask for, and the SSH certificate it gets.
 *
 * Roles fix the format: admin, agent, peer, user and gateway get X.509;
 * domain and ssh-guest get OpenSSH certificates. Names and metadata must
 * be valid names ([a-z0-9-], at most 63), and a gateway's hosts IP
 * addresses or DNS names, all checked before anything reaches OpenSSL or
 * the certificate encoders. Validity is bounded (signer_limits) and
 * computed by the caller from one clock reading, so the functions here
 * are pure apart from the random serial.
 *
 * SSH certificates make the role readable where ssh-keygen -L shows it:
 * the key id is "<name> role=<role>[ domain=<d>]...", and the principals
 * are "<role>:<name>" plus "domain:<d>" when a domain is named (the
 * principal a relay's sshd maps to its user). The same values travel in
 * <k>@larkbus extensions for programs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signer-int.h"

#define NS 1000000000LL

static const struct {
  const char *name;
  int format;
} roles[] = {
    {"admin", SIGNER_X509},    {"agent", SIGNER_X509},   {"peer", SIGNER_X509},
    {"user", SIGNER_X509},     {"gateway", SIGNER_X509}, {"domain", SIGNER_SSH},
    {"ssh-guest", SIGNER_SSH},
};

int
signer_role_format(const char *role) {
  for (size_t i = 0; role && i < sizeof roles / sizeof roles[0]; i++)
    if (!strcmp(role, roles[i].name))
      return roles[i].format;
  return 0;
}

const char *
signer_format_name(int format) {
  return format == SIGNER_X509 ? "x509" : format == SIGNER_SSH ? "ssh" : "";
}

void
signer_limits_init(signer_limits *l) {
  l->default_ns = 24 * 3600 * NS;
  l->min_ns = 60 * NS;
  l->max_ns = 30 * 86400 * NS;
  l->backdate_ns = 60 * NS;
}

int
signer_validity(const signer_limits *l, int64_t now_ns, int64_t want_ns,
                int64_t *not_before, int64_t *not_after, char *err,
                size_t cap) {
  int64_t v = want_ns ? want_ns : l->default_ns;
  if (v < l->min_ns || v > l->max_ns) {
    snprintf(err, cap, "validity must be from %llds to %llds",
             (long long)(l->min_ns / NS), (long long)(l->max_ns / NS));
    return BUS_EFIELD;
  }
  *not_before = now_ns - l->backdate_ns;
  *not_after = now_ns + v;
  return 0;
}

static int
opt_ok(const char *s) {
  return !s || !*s || bus_name_valid(s, BUS_NAME_MAX);
}

/* A gateway's hosts: addresses or DNS names, at most SIGNER_MAX_HOSTS;
 * no other role names hosts. */
static int
hosts_ok(const signer_req *r, char *err, size_t cap) {
  if (r->nhosts && strcmp(r->role, "gateway")) {
    snprintf(err, cap, "hosts: only a gateway certificate names hosts");
    return 0;
  }
  if (r->nhosts < 0 || r->nhosts > SIGNER_MAX_HOSTS) {
    snprintf(err, cap, "hosts: at most %d", SIGNER_MAX_HOSTS);
    return 0;
  }
  for (int i = 0; i < r->nhosts; i++)
    if (!r->hosts[i] || strlen(r->hosts[i]) > SIGNER_HOST_MAX ||
        (!signer_host_is_ip(r->hosts[i]) &&
         !signer__host_is_dns(r->hosts[i]))) {
      snprintf(err, cap,
               "hosts: an IP address or a DNS name ([a-z0-9-] "
               "labels joined by dots)");
      return 0;
    }
  return 1;
}

/* The names of a request, or a message on what is wrong. */
static int
check(const signer_req *r, int *format, char *err, size_t cap) {
  *format = signer_role_format(r->role);
  if (!*format)
    snprintf(err, cap,
             "role: one of admin, agent, peer, user, gateway, domain, "
             "ssh-guest");
  else if (!r->name || !bus_name_valid(r->name, BUS_NAME_MAX))
    snprintf(err, cap, "name: [a-z0-9-], at most 63, not starting with '-'");
  else if (!opt_ok(r->domain) || !opt_ok(r->cluster) || !opt_ok(r->agent))
    snprintf(err, cap, "domain, cluster and agent must be names");
  else if (!strcmp(r->role, "domain") && !(r->domain && *r->domain))
    snprintf(err, cap, "domain: role domain needs a domain");
  else if (!hosts_ok(r, err, cap))
    return BUS_EFIELD;
  else if (r->not_before <= 0 || r->not_after <= r->not_before)
    snprintf(err, cap, "validity: notAfter must follow notBefore");
  else
    return 0;
  return BUS_EFIELD;
}

/* Metadata in the order shown: role, domain, cluster, agent. */
static int
ssh_meta(const signer_req *r, const char **k, const char **v) {
  const char *keys[] = {"role", "domain", "cluster", "agent"};
  const char *vals[] = {r->role, r->domain, r->cluster, r->agent};
  int n = 0;
  for (int i = 0; i < 4; i++)
    if (vals[i] && *vals[i]) {
      k[n] = keys[i];
      v[n++] = vals[i];
    }
  return n;
}

static void
ssh_names(const signer_req *r, signer_cert *c, const char **k, const char **v,
          int n) {
  size_t at = (size_t)snprintf(c->subject, sizeof c->subject, "%s", r->name);
  for (int i = 0; i < n && at < sizeof c->subject; i++)
    at += (size_t)snprintf(c->subject + at, sizeof c->subject - at, " %s=%s",
                           k[i], v[i]);
  const char *role = strcmp(r->role, "ssh-guest") ? r->role : "guest";
  c->nprincipals = 0;
  snprintf(c->principals[c->nprincipals++], sizeof c->principals[0], "%s:%s",
           role, r->name);
  if (r->domain && *r->domain && strcmp(r->role, "domain"))
    snprintf(c->principals[c->nprincipals++], sizeof c->principals[0],
             "domain:%s", r->domain);
  else if (r->domain && *r->domain)
    snprintf(c->principals[0], sizeof c->principals[0], "domain:%s", r->domain);
}

static int
ssh_issue(const signer_ca *ca, const signer_req *r, signer_cert *c, char *err,
          size_t cap) {
  uint8_t pk[32];
  const char *k[4], *v[4], *pr[SIGNER_MAX_PRINCIPALS];
  if (signer_ssh_pub_parse(r->ssh_key, r->ssh_key_len, pk)) {
    snprintf(err, cap, "sshKey: an \"ssh-ed25519 AAAA...\" public key");
    return BUS_EFIELD;
  }
  int n = ssh_meta(r, k, v);
  ssh_names(r, c, k, v, n);
  for (int i = 0; i < c->nprincipals; i++)
    pr[i] = c->principals[i];
  uint64_t serial = signer__serial_ssh(c->serial);
  signer_ssh_cert_spec s = {.pk = pk,
                            .serial = serial,
                            .key_id = c->subject,
                            .principals = pr,
                            .nprincipals = c->nprincipals,
                            .valid_after = (uint64_t)(r->not_before / NS),
                            .valid_before = (uint64_t)(r->not_after / NS),
                            .ext_keys = k,
                            .ext_vals = v,
                            .next = n,
                            .comment = r->name};
  c->format = SIGNER_SSH;
  c->not_before = r->not_before / NS * NS;
  c->not_after = r->not_after / NS * NS;
  signer_ssh_fingerprint(pk, c->fingerprint);
  return signer_ssh_cert_make(ca->ssh_pk, ca->ssh_sk, &s, &c->text);
}

int
signer_issue(const signer_ca *ca, const signer_req *req, signer_cert *out,
             char *err, size_t cap) {
  int format;
  memset(out, 0, sizeof *out);
  int rc = check(req, &format, err, cap);
  if (rc)
    return rc;
  if (format == SIGNER_X509)
    return signer__x509_issue(ca, req, out, err, cap);
  return ssh_issue(ca, req, out, err, cap);
}

void
signer_cert_clear(signer_cert *c) {
  free(c->text);
  memset(c, 0, sizeof *c);
}
