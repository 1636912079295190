/*
 * test_sites.c - edge sites as leaf nodes (deploy/sites.c), against real
 * servers: a hub with a TLS leaf listener and two sites' leaf servers
 * rendered by lark_site_add (support/sitebed.c).
 *
 * - What a site gets: its leaf config (the hub's URL, its seed, TLS), its
 *   nodes' users with the hub's node rules, their seeds; the hub's user
 *   for the site names its nodes' subjects and no other's. A node that
 *   leaves the registry leaves the site's files and the hub's user.
 * - A node behind a site reads only its own stream and writes only its
 *   own ingress, as it would at the hub.
 * - A site taken over (its leaf credentials in a server that lets its
 *   users do anything) reaches no other site's slices, ingress or
 *   inboxes.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deploy.h"
#include "events.h"
#include "proc.h"
#include "secbed.h"
#include "sitebed.h"
#include "wait.h"

static char *
slurp(const char *path) {
  FILE *f = fopen(path, "r");
  cr_assert(f, "cannot open %s", path);
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

static char *
site_file(lt_sitebed *x, const char *site, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/sites/%s/%s", x->data, site, name);
  return slurp(path);
}

/* The hub's user block for principal name (up to the next user). */
static void
hub_user(lt_sitebed *x, const char *name, char *out, size_t cap) {
  char path[400], tag[80];
  snprintf(path, sizeof path, "%s/broker/accounts.conf", x->data);
  snprintf(tag, sizeof tag, "# %s (", name);
  const char *text = slurp(path), *at = strstr(text, tag);
  cr_assert(at, "no user %s at the hub", name);
  const char *end = strstr(at + 1, "      # ");
  snprintf(out, cap, "%.*s", (int)(end ? end - at : (long)strlen(at)), at);
}

Test(sites, renders_what_a_site_needs, .timeout = 60) {
  lt_sitebed x;
  lt_sitebed_up(&x, 0);
  char *leaf = site_file(&x, "north", "leaf.conf");
  cr_assert(strstr(leaf, x.hub_url), "%s", leaf);
  cr_assert(strstr(leaf, "nkey: \"SU"), "the site's seed");
  cr_assert(strstr(leaf, "/sites/north/tls/cert.pem"));
  cr_assert(strstr(leaf, "account: \"LARK\""));
  cr_assert(!strstr(leaf, "jetstream"), "a site has no JetStream");
  char path[400];
  struct stat st;
  snprintf(path, sizeof path, "%s/sites/north/leaf.conf", x.data);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600, "leaf.conf holds a seed");

  char *acc = site_file(&x, "north", "accounts.conf");
  cr_assert(strstr(acc, "# n1 (node)") && strstr(acc, "# n2 (node)"));
  cr_assert(!strstr(acc, "s1") && !strstr(acc, "admin"), "%s", acc);
  cr_assert(strstr(acc, "\"lark.in.n1.>\""));
  cr_assert(!strstr(acc, "jetstream"));
  snprintf(path, sizeof path, "%s/sites/north/creds/n1.nk", x.data);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600);
  snprintf(path, sizeof path, "%s/sites/north/creds/s1.nk", x.data);
  cr_assert_neq(stat(path, &st), 0, "another site's seed");

  char user[8192];
  hub_user(&x, "north", user, sizeof user);
  cr_assert(strstr(user, "(site)"));
  cr_assert(strstr(user, "\"lark.in.n1.>\"") &&
            strstr(user, "\"lark.in.n2.>\""));
  cr_assert(strstr(user, "\"_INBOX_n2.>\""));
  cr_assert(strstr(user, "$JS.API.CONSUMER.MSG.NEXT.LARK_NODE_n1.edge-n1"));
  cr_assert(!strstr(user, "s1"), "%s", user);
  cr_assert(strstr(user, "deny: [\"$JS.API.STREAM.MSG.GET.>\""));

  /* A node already at north cannot join south. */
  const char *n1[] = {"n1"};
  lark_site_opts o;
  lark_site_opts_init(&o);
  cr_assert_eq(lark_site_add(x.data, "south", n1, 1, &o, NULL), BUS_EEXISTS);
  /* A site without nodes may do nothing at all. */
  o.hub_url = x.hub_url;
  cr_assert_eq(lark_site_add(x.data, "east", NULL, 0, &o, NULL), 0, "%s",
               lark_cfg_error());
  hub_user(&x, "east", user, sizeof user);
  cr_assert(strstr(user, "publish: { deny: [\">\"] }"), "%s", user);
  cr_assert(strstr(user, "subscribe: { deny: [\">\"] }"), "%s", user);
  /* and its server has a user (no user at all would let anyone in) */
  acc = site_file(&x, "east", "accounts.conf");
  cr_assert(strstr(acc, "# east (site)") &&
                strstr(acc, "publish: { deny: [\">\"] }"),
            "%s", acc);

  /* n2 leaves the registry (a decommissioned node): it leaves north's
   * users, its seed there, and the hub's north user. */
  char out[4096], err[4096];
  cr_assert_eq(lt_sh(out, sizeof out, err, sizeof err,
                     "sed -i '/^n2 /d' '%s/creds/users'", x.data),
               0);
  cr_assert_eq(lark_regen_accounts(x.data), 0, "%s", lark_cfg_error());
  acc = site_file(&x, "north", "accounts.conf");
  cr_assert(strstr(acc, "# n1 (node)") && !strstr(acc, "n2"), "%s", acc);
  snprintf(path, sizeof path, "%s/sites/north/creds/n2.nk", x.data);
  cr_assert_neq(stat(path, &st), 0, "a removed node's seed stays at the site");
  hub_user(&x, "north", user, sizeof user);
  cr_assert(!strstr(user, "n2"), "%s", user);
  lt_sitebed_down(&x);
}

/* node's slice consumer as lark-edge opens it, stream and filter given. */
static int
open_slice(bus_conn *c, const char *node, const char *stream,
           const char *durable, const char *filter, bus_consumer **k) {
  bus_slice sl;
  cr_assert_eq(bus_slice_init(&sl, node), 0);
  sl.opts.stream = stream;
  sl.opts.durable = durable;
  sl.opts.filter = filter;
  return bus_consumer_open(c, &sl.opts, k);
}

/* Messages a fetch from k gets (acked), each subject checked. */
static size_t
fetch_all(bus_consumer *k, const char *prefix) {
  bus_batch *b = NULL;
  cr_assert_eq(bus_batch_new(&b), 0);
  cr_assert_eq(bus_consumer_fetch(k, 16, 2000, b), 0, "%s", bus_last_error());
  size_t n = bus_batch_len(b);
  for (size_t i = 0; i < n; i++) {
    const char *subject = NULL;
    bus_batch_meta(b, i, &subject, NULL, NULL);
    cr_assert(!strncmp(subject, prefix, strlen(prefix)), "%s", subject);
  }
  cr_assert_eq(bus_batch_ack(b), 0, "%s", bus_last_error());
  bus_batch_free(b);
  return n;
}

static uint64_t
last_seq(lt_sitebed *x, const char *stream) {
  uint64_t seq = 0;
  cr_assert_eq(bus_stream_last_seq(x->admin, stream, &seq), 0, "%s",
               bus_last_error());
  return seq;
}

Test(sites, node_behind_a_site_keeps_to_its_own, .timeout = 120) {
  lt_sitebed x;
  lt_sitebed_up(&x, 1);
  bus_conn *n1 = NULL;
  bus_consumer *k = NULL;
  cr_assert_eq(lt_site_connect(&x, 0, "n1", &n1), 0, "%s", bus_last_error());

  /* Another node's slice, at its site or at another, in every form. */
  cr_assert_lt(
      open_slice(n1, "n1", "LARK_NODE_n2", "edge-n2", "lark.node.n2.>", &k), 0,
      "n2's slice from n1");
  cr_assert_lt(
      open_slice(n1, "n1", "LARK_NODE_s1", "edge-s1", "lark.node.s1.>", &k), 0,
      "s1's slice from n1");
  cr_assert_lt(
      open_slice(n1, "n1", "LARK_NODE_n1", "edge-n1", "lark.node.>", &k), 0,
      "a wider filter");
  void *reply = NULL;
  size_t len = 0;
  const char get[] = "{\"last_by_subj\":\"lark.node.s1.pod.secret\"}";
  cr_assert_lt(bus_conn_request(n1, "$JS.API.DIRECT.GET.LARK_NODE_s1", get,
                                sizeof get - 1, 500, &reply, &len),
               0, "DIRECT.GET");
  cr_assert_lt(bus_conn_request(n1, "$JS.API.STREAM.MSG.GET.LARK_NODE_n1",
                                "{\"seq\":1}", 9, 500, &reply, &len),
               0, "STREAM.MSG.GET");

  /* Its own slice, through the site, holds its own desired states. */
  cr_assert_eq(
      open_slice(n1, "n1", "LARK_NODE_n1", "edge-n1", "lark.node.n1.>", &k), 0,
      "%s", bus_last_error());
  cr_assert_eq(fetch_all(k, "lark.node.n1."), 2);
  bus_consumer_close(k);

  /* Its own ingress only. */
  uint64_t before = last_seq(&x, "LARK_INGRESS");
  uint64_t seq = 0;
  bus_event ev;
  msgpack_sbuffer body;
  char id[33];
  lt_pack_text(&body, "hello");
  lt_sample_event(&ev, id, "sample.created", &body);
  cr_assert_eq(bus_append(n1, "lark.in.n1.sched.pod.a", &ev, BUS_APPEND_NOCHECK,
                          &seq, NULL),
               0, "%s", bus_last_error());
  cr_assert_eq(seq, before + 1);
  lt_sample_event(&ev, id, "sample.created", &body);
  cr_assert_lt(bus_append(n1, "lark.in.s1.sched.pod.a", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL),
               0, "s1's ingress from n1");
  bus_conn_publish(n1, "lark.in.n2.logs.p", "x", 1);
  bus_conn_publish(n1, "lark.ev.sample.y", "x", 1);
  lt_sleep_ms(300);
  cr_assert_eq(last_seq(&x, "LARK_INGRESS"), before + 1);
  msgpack_sbuffer_destroy(&body);
  bus_conn_close(n1);
  lt_sitebed_down(&x);
}

/* A server at north that anyone taking the site over could run: north's
 * leaf login and certificate, and a local user "evil" allowed anything.
 * Its pid; its client URL into url. */
static pid_t
evil_leaf(lt_sitebed *x, char *url, size_t cap, char *creds, size_t ccap) {
  char dir[400], path[512], seed[BUS_NKEY_SEED_LEN + 1],
      pub[BUS_NKEY_PUB_LEN + 1];
  char site_seed[BUS_NKEY_SEED_LEN + 1], nk[400], out[4096], err[4096];
  snprintf(dir, sizeof dir, "%s/evil", x->data);
  cr_assert_eq(lark_mkdirs(dir, 0700), 0);
  cr_assert_eq(bus_nkey_create(seed, pub), 0);
  snprintf(creds, ccap, "%s/evil.nk", dir);
  cr_assert_eq(bus_nkey_write(creds, seed), 0);
  lark_creds_path(x->data, "north", nk, sizeof nk);
  cr_assert_eq(lt_sh(out, sizeof out, err, sizeof err,
                     "grep -o '^SU[A-Z2-7]*' '%s'", nk),
               0);
  snprintf(site_seed, sizeof site_seed, "%.*s", BUS_NKEY_SEED_LEN, out);
  int port = lark_free_port();
  snprintf(path, sizeof path, "%s/evil.conf", dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fprintf(f,
          "server_name: evil\nhost: 127.0.0.1\nport: %d\n"
          "default_js_domain: { LARK: \"\" }\n"
          "leafnodes { remotes: [ { url: \"%s\", account: LARK, nkey: \"%s\", "
          "tls { cert_file: \"%s/sites/north/tls/cert.pem\", key_file: "
          "\"%s/sites/north/tls/key.pem\", ca_file: "
          "\"%s/sites/north/tls/ca.pem\" } } ] }\n"
          "accounts { LARK { users: [ { nkey: \"%s\" } ] } }\n",
          port, x->hub_url, site_seed, x->data, x->data, x->data, pub);
  fclose(f);
  snprintf(url, cap, "nats://127.0.0.1:%d", port);
  char bin[] = "/usr/bin/env", ns[] = "nats-server", c[] = "-c";
  char *argv[] = {bin, ns, c, path, NULL};
  snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/log");
  return lt_spawn(argv, dir);
}

typedef struct seen {
  atomic_int other; /* anything of south's node s1 */
  atomic_int own;   /* north's own device requests */
  atomic_int push;  /* north's own pushed desired states */
  char first[256];  /* the first of south's subjects seen */
} seen;

static void
on_any(bus_conn *c, const char *subject, const char *reply, const void *data,
       size_t len, void *ud) {
  seen *s = ud;
  (void)c, (void)reply;
  if ((strstr(subject, "s1") || (len >= 2 && !memcmp(data, "s1", 2))) &&
      atomic_fetch_add(&s->other, 1) == 0)
    snprintf(s->first, sizeof s->first, "%s", subject);
  if (!strncmp(subject, "lark.dev.n1.", 12))
    atomic_fetch_add(&s->own, 1);
  if (!strncmp(subject, "lark.push.n1.", 13))
    atomic_fetch_add(&s->push, 1);
}

static size_t
consumers(lt_sitebed *x, const char *stream) {
  char subj[128];
  void *reply = NULL;
  size_t len = 0;
  snprintf(subj, sizeof subj, "$JS.API.CONSUMER.NAMES.%s", stream);
  cr_assert_eq(bus_conn_request(x->admin, subj, "{}", 2, 2000, &reply, &len),
               0);
  size_t n = 0;
  for (const char *p = reply;
       (p = memmem(p, len - (size_t)(p - (char *)reply), "\"edge-", 6)); p++)
    n++;
  int evil = memmem(reply, len, "evil", 4) != NULL;
  free(reply);
  return evil ? 100 : n;
}

Test(sites, a_site_taken_over_reaches_no_other_site, .timeout = 120) {
  lt_sitebed x;
  lt_sitebed_up(&x, 1);
  char url[64], creds[512];
  lt_leaf_stop(&x, 0); /* the attacker's server replaces north's */
  pid_t evil_pid = evil_leaf(&x, url, sizeof url, creds, sizeof creds);
  cr_assert_gt(evil_pid, 0);
  bus_conn *e = NULL, *s1 = NULL;
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = url;
  o.creds = creds;
  o.js_wait_ms = 500;
  o.inbox_prefix = "_INBOX_n1"; /* what north's leaf login may receive */
  for (int t = 0; t < 50 && bus_conn_open(&e, &o) < 0; t++)
    lt_sleep_ms(100);
  cr_assert(e, "the attacker's server did not start");
  bus_conn *e2 = NULL; /* with s1's inbox, as if it were s1 */
  o.inbox_prefix = "_INBOX_s1";
  cr_assert_eq(bus_conn_open(&e2, &o), 0);
  /* Linked: it can still work its own site's node (n1) at the hub. */
  bus_consumer *k = NULL;
  int linked = -1;
  for (int t = 0; t < 100 && linked < 0; t++)
    if ((linked = open_slice(e, "n1", "LARK_NODE_n1", "edge-n1",
                             "lark.node.n1.>", &k)) < 0)
      lt_sleep_ms(100);
  cr_assert_eq(linked, 0, "north's login no longer links");
  bus_consumer_close(k);

  seen s = {0};
  bus_serve *sv[4] = {0};
  const char *subs[] = {">", "lark.node.s1.>", "_INBOX_s1.>", "lark.in.>"};
  for (size_t i = 0; i < 4; i++)
    cr_assert_eq(bus_conn_serve(e, subs[i], NULL, on_any, &s, &sv[i]), 0);
  lt_sleep_ms(300);

  /* South works meanwhile: s1 pulls its slice, reports; the admin writes
   * its desired state and asks its devices and n1's. */
  cr_assert_eq(lt_site_connect(&x, 1, "s1", &s1), 0, "%s", bus_last_error());
  cr_assert_eq(
      open_slice(s1, "s1", "LARK_NODE_s1", "edge-s1", "lark.node.s1.>", &k), 0,
      "%s", bus_last_error());
  bus_conn_publish(x.admin, "lark.node.s1.pod.more", "s1", 2);
  for (int t = 0; t < 50 && last_seq(&x, "LARK_NODE_s1") < 2; t++)
    lt_sleep_ms(50);
  cr_assert_eq(fetch_all(k, "lark.node.s1."), 2);
  bus_consumer_close(k);
  uint64_t ingress = last_seq(&x, "LARK_INGRESS");
  bus_conn_publish(s1, "lark.in.s1.logs.p", "s1", 2);
  for (int t = 0; t < 50 && last_seq(&x, "LARK_INGRESS") == ingress; t++)
    lt_sleep_ms(50);
  cr_assert_eq(last_seq(&x, "LARK_INGRESS"), ++ingress, "s1's report");
  atomic_int s1_pushed = 0;
  bus_serve *s1_push = NULL;
  cr_assert_eq(bus_conn_serve(s1, "lark.push.s1.>", NULL, lt_count_cb,
                              &s1_pushed, &s1_push),
               0);
  lt_sleep_ms(300);
  bus_conn_publish(x.admin, "lark.dev.s1.camera.c.capture", "s1", 2);
  bus_conn_publish(x.admin, "lark.dev.n1.camera.c.capture", "n1", 2);
  bus_conn_publish(x.admin, "lark.push.s1.pod.more", "s1", 2);
  bus_conn_publish(x.admin, "lark.push.n1.pod.mine", "n1", 2);
  lt_sleep_ms(500);
  /* (the attacker's own publishes below reach its own subscribers) */
  cr_assert_eq(atomic_load(&s.other), 0, "south's %s reached north", s.first);
  cr_assert_gt(atomic_load(&s.own), 0, "north's own requests arrive");
  cr_assert_gt(atomic_load(&s.push), 0, "north's own pushes arrive");
  cr_assert_eq(atomic_load(&s1_pushed), 1, "s1 hears its push at its site");
  bus_conn_unserve(s1_push);

  /* Every way at south from the attacker's server. */
  size_t before = consumers(&x, "LARK_NODE_s1");
  cr_assert_lt(
      open_slice(e, "s1", "LARK_NODE_s1", "edge-s1", "lark.node.s1.>", &k), 0,
      "s1's slice through north's login");
  cr_assert_lt(
      open_slice(e, "n1", "LARK_NODE_s1", "evil", "lark.node.s1.>", &k), 0);
  cr_assert_lt(
      open_slice(e2, "s1", "LARK_NODE_s1", "edge-s1", "lark.node.s1.>", &k), 0,
      "s1's slice with s1's inbox");
  void *reply = NULL;
  size_t len = 0;
  const char get[] = "{\"last_by_subj\":\"lark.node.s1.pod.secret\"}";
  const char *asks[] = {"$JS.API.DIRECT.GET.LARK_NODE_s1",
                        "$JS.API.STREAM.MSG.GET.LARK_NODE_s1",
                        "$JS.API.STREAM.INFO.LARK_NODE_s1",
                        "$JS.API.CONSUMER.INFO.LARK_NODE_s1.edge-s1",
                        "$JS.API.CONSUMER.MSG.NEXT.LARK_NODE_s1.edge-s1",
                        "$JS.API.STREAM.NAMES"};
  for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
    cr_assert_lt(
        bus_conn_request(e, asks[i], get, sizeof get - 1, 500, &reply, &len), 0,
        "%s answered", asks[i]);
    cr_assert_lt(
        bus_conn_request(e2, asks[i], get, sizeof get - 1, 500, &reply, &len),
        0, "%s answered to s1's inbox", asks[i]);
  }
  bus_conn_publish(e, "lark.in.s1.sched.pod.a", "x", 1);
  bus_conn_publish(e, "lark.ev.sample.x", "x", 1);
  bus_conn_publish(e, "$JS.ACK.LARK_NODE_s1.edge-s1.1.1.1.1.0", "", 0);
  lt_sleep_ms(500);
  uint64_t now = last_seq(&x, "LARK_INGRESS");
  cr_assert_eq(now, ingress, "%llu reports from the attacker",
               (unsigned long long)(now - ingress));
  cr_assert_eq(consumers(&x, "LARK_NODE_s1"), before);
  for (size_t i = 0; i < 4; i++)
    bus_conn_unserve(sv[i]);
  bus_conn_close(s1);
  bus_conn_close(e2);
  bus_conn_close(e);
  lt_kill(evil_pid, SIGTERM);
  lt_sitebed_down(&x);
}

/* The hub URLs a site is given: each URL's host, for the hub's
 * certificate, and each item of the comma-separated list, empty ones
 * included (the renderer refuses those). */
Test(sites, hub_urls_split_into_hosts) {
  char host[64];
  const char *urls = "nats-leaf://lark@hub-a.example:7422,nats-leaf://"
                     "10.0.0.2:7423,,hub-c",
             *p = urls, *it;
  const char *want[] = {"hub-a.example", "10.0.0.2", NULL, "hub-c"};
  size_t n, i = 0;
  while (lark_list_next(&p, &it, &n)) {
    cr_assert_lt(i, 4, "more items than the list has");
    int rc = lark_url_host(it, n, host, sizeof host);
    if (want[i]) {
      cr_assert_eq(rc, 0, "item %zu: %.*s", i, (int)n, it);
      cr_assert_str_eq(host, want[i]);
    } else {
      cr_assert_eq(rc, -1, "an empty item has no host");
    }
    i++;
  }
  cr_assert_eq(i, 4);
  cr_assert_eq(lark_url_host("nats://:4222", 12, host, sizeof host), -1);
  cr_assert_eq(lark_url_host("tls://h/x:1", 11, host, sizeof host), 0);
  cr_assert_str_eq(host, "h");
  cr_assert_eq(lark_url_host("nats://a-very-long-host:1", 25, host, 8), -1,
               "a host that does not fit is refused, not cut");
}

/* The ports `larkctl up` gives its listeners are chosen outside the
 * kernel's ephemeral range, where an outgoing connection's source port
 * could take one before the server binds it. */
Test(sites, listener_ports_avoid_the_ephemeral_range) {
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  int low = 32768, high = 60999;
  if (f) {
    cr_assert_eq(fscanf(f, "%d %d", &low, &high), 2);
    fclose(f);
  }
  int seen[16], distinct = 0;
  for (int i = 0; i < 16; i++) {
    seen[i] = lark_free_port();
    cr_assert(seen[i] > 0 && seen[i] < low, "port %d in [%d, %d]", seen[i], low,
              high);
    int dup = 0;
    for (int j = 0; j < i; j++)
      dup |= seen[j] == seen[i];
    distinct += !dup;
  }
  cr_assert_gt(distinct, 8, "ports are picked at random: %d of 16 distinct",
               distinct);
}

/* Does the hub's leaf certificate name every host a site is given?
 * (site add issues a new one when it does not.) */
Test(sites, a_host_list_covers_another) {
  cr_assert(lark_list_covers("127.0.0.1", "127.0.0.1"));
  cr_assert(lark_list_covers("hub-a,hub-b,hub-c", "hub-c,hub-a"));
  cr_assert(lark_list_covers("hub-a", NULL), "nothing wanted: covered");
  cr_assert(lark_list_covers("", ""));
  cr_assert_not(lark_list_covers("hub-a,hub-b", "hub-a,hub-c"),
                "a new server's host is not named");
  cr_assert_not(lark_list_covers("hub-ab", "hub-a"), "items, not prefixes");
  cr_assert_not(lark_list_covers("hub-a", "hub-ab"), "items, not prefixes");
  cr_assert_not(lark_list_covers(NULL, "hub-a"), "no record names nothing");
}
