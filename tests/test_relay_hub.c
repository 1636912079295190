/*
 * test_relay_hub.c - lark-relay hub as a process, reached with the real
 * OpenSSH client (ssh -W) on 127.0.0.1: bytes round-trip to an echo
 * server the test runs; no certificate, another CA, an expired
 * certificate, a target outside the allow-list and a certificate revoked
 * while the hub runs are refused, with the reason in the hub's log.
 * With a bus (relay_hub_bus), route rows decide the targets, channels
 * go through a node relay's registration, and cert.revoked events close
 * open sessions.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libssh/libssh.h>
#include <sodium.h>

#include "certcheck.h"
#include "natsd.h"
#include "proc.h"
#include "relayc.h"
#include "signer.h"
#include "wait.h"

static char dir[256], logpath[512];
static int echo_port, hub_port;
static pid_t hub_pid;
static char out[1 << 14], err[8192];

/* a shell command line; stdout into out, stderr into err */
#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

static void
echo_start(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET};
  socklen_t len = sizeof sa;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert_geq(ls, 0);
  cr_assert_eq(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
  cr_assert_eq(listen(ls, 16), 0);
  getsockname(ls, (struct sockaddr *)&sa, &len);
  echo_port = ntohs(sa.sin_port);
  cr_assert_eq(lt_echo_start(ls, NULL), 0);
}

/* Certificate for key `name` (made here) signed by `ca`, with opts. */
static void
cert(const char *ca, const char *name, const char *opts) {
  cr_assert_eq(sh("cd %s && rm -f %s %s.pub %s-cert.pub && ssh-keygen -q -t "
                  "ed25519 -N '' -f %s && ssh-keygen -q -s %s %s %s.pub",
                  dir, name, name, name, name, ca, opts, name),
               0, "%s", err);
}

/* The hub, with --allow for the echo server, or following the bus at
 * url (routes and revocations) when url is not NULL. */
static void
start_hub_with(const char *url) {
  char bin[512], ca[512], key[512], krl[512], allow[128], pf[512], l[64];
  lt_bin("lark-relay", bin, sizeof bin);
  snprintf(ca, sizeof ca, "%s/ca.pub", dir);
  snprintf(key, sizeof key, "%s/hostkey", dir);
  snprintf(krl, sizeof krl, "%s/revoked_keys", dir);
  snprintf(pf, sizeof pf, "%s/port", dir);
  snprintf(allow, sizeof allow, "d1=127.0.0.1:%d", echo_port);
  snprintf(l, sizeof l, "127.0.0.1:0");
  char *argv[] = {bin,
                  (char *)"hub",
                  (char *)"--listen",
                  l,
                  (char *)"--ca",
                  ca,
                  (char *)"--host-key",
                  key,
                  (char *)"--revoked",
                  krl,
                  (char *)"--port-file",
                  pf,
                  (char *)"--reload-ms",
                  (char *)"200",
                  (char *)(url ? "--url" : "--allow"),
                  url ? (char *)url : allow,
                  NULL};
  hub_pid = lt_spawn(argv, logpath);
  cr_assert_gt(hub_pid, 0);
  for (int i = 0; i < 300 && !hub_port; i++) {
    FILE *f = fopen(pf, "r");
    if (f) {
      if (fscanf(f, "%d", &hub_port) != 1)
        hub_port = 0;
      fclose(f);
    }
    if (!hub_port)
      lt_sleep_ms(50);
  }
  cr_assert_gt(hub_port, 0, "the hub did not start");
}

static void
start_hub(void) {
  start_hub_with(NULL);
}

/* Keys, an empty KRL and dir/in (size bytes of random data). */
static void
prepare(size_t size) {
  lt_tmpdir(dir, sizeof dir, "relayhub");
  snprintf(logpath, sizeof logpath, "%s/hub.log", dir);
  hub_port = 0;
  cr_assert_eq(sh("cd %s && ssh-keygen -q -t ed25519 -N '' -f ca && "
                  "ssh-keygen -q -t ed25519 -N '' -f other && "
                  "ssh-keygen -q -t ed25519 -N '' -f hostkey && "
                  ": > revoked_keys && head -c %zu /dev/urandom > in",
                  dir, size),
               0, "%s", err);
}

static void
setup(void) {
  prepare(262144);
  echo_start();
  start_hub();
}

static void
teardown(void) {
  if (hub_pid > 0) {
    int st = lt_kill(hub_pid, SIGTERM);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hub exit %d", st);
  }
  lt_rmtree(dir);
}

TestSuite(relay_hub, .init = setup, .fini = teardown, .timeout = 120);

/* ssh -W through the hub with key `name` (and its -cert.pub when
 * with_cert) to 127.0.0.1:port, stdin from dir/in, stdout to dir/out. */
static int
via_hub_to(const char *name, int with_cert, const char *target) {
  char certopt[600] = "";
  if (with_cert)
    snprintf(certopt, sizeof certopt, "-o CertificateFile=%s/%s-cert.pub", dir,
             name);
  return sh("timeout 60 ssh -N -o BatchMode=yes -o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "
            "-o ConnectTimeout=30 -F /dev/null -o IdentitiesOnly=yes "
            "-i %s/%s %s -p %d -W %s anyuser@127.0.0.1 "
            "< %s/in > %s/out",
            dir, name, certopt, hub_port, target, dir, dir);
}

static int
via_hub(const char *name, int with_cert, int port) {
  char target[64];
  snprintf(target, sizeof target, "127.0.0.1:%d", port);
  return via_hub_to(name, with_cert, target);
}

static int
same_bytes(void) {
  return sh("cmp -s %s/in %s/out", dir, dir) == 0;
}

static int
out_empty(void) {
  return sh("test ! -s %s/out", dir) == 0;
}

/* Wait (up to 10 s) for the hub's log to say what. */
static int
hub_said(const char *what) {
  for (int i = 0; i < 100; i++) {
    if (sh("grep -F -q -- '%s' %s", what, logpath) == 0)
      return 1;
    lt_sleep_ms(100);
  }
  return 0;
}

/* A connection through the hub (rc: how ssh ended) that was refused:
 * nothing got through, and the hub's log says why. */
static void
refused(int rc, const char *why) {
  cr_expect_neq(rc, 0);
  cr_expect(out_empty());
  cr_expect(hub_said(why), "the hub never said: %s", why);
}

Test(relay_hub, bytes_round_trip) {
  cert("ca", "u",
       "-I 'r1 role=domain domain=d1' -n domain:d1 -z 11 "
       "-V -1m:+1h");
  cr_assert_eq(via_hub("u", 1, echo_port), 0, "%s", err);
  cr_expect(same_bytes(), "bytes differ");
  cr_expect(hub_said("channel"));
  /* twice more: sessions come and go */
  for (int i = 0; i < 2; i++) {
    cr_expect_eq(via_hub("u", 1, echo_port), 0, "%s", err);
    cr_expect(same_bytes());
  }
}

Test(relay_hub, no_certificate_is_refused) {
  cert("ca", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 12");
  cr_assert_eq(sh("rm %s/u-cert.pub", dir), 0);
  refused(via_hub("u", 0, echo_port), "no certificate offered");
}

Test(relay_hub, foreign_ca_is_refused) {
  cert("other", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 13");
  refused(via_hub("u", 1, echo_port), "signed by another CA");
}

Test(relay_hub, expired_certificate_is_refused) {
  cert("ca", "u",
       "-I 'r1 role=domain domain=d1' -n domain:d1 -z 14 "
       "-V 20200101:20200102");
  refused(via_hub("u", 1, echo_port), "certificate expired");
}

Test(relay_hub, wrong_domain_role_is_refused) {
  cert("ca", "u",
       "-I 'bob role=ssh-guest domain=d1' -n guest:bob,domain:d1 "
       "-z 15");
  refused(via_hub("u", 1, echo_port), "role is not the one required");
}

Test(relay_hub, target_not_allowed_is_refused) {
  cert("ca", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 16");
  refused(via_hub("u", 1, echo_port + 1 > 65535 ? 1 : echo_port + 1),
          "target not allowed for domain d1");
  /* another domain's certificate for the allowed target */
  cert("ca", "v", "-I 'r2 role=domain domain=d2' -n domain:d2 -z 17");
  refused(via_hub("v", 1, echo_port), "target not allowed for domain d2");
}

Test(relay_hub, revoked_while_running_is_refused) {
  char path[512];
  uint8_t pk[32];
  cert("ca", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 77");
  cr_assert_eq(via_hub("u", 1, echo_port), 0, "%s", err);
  cr_expect(same_bytes());
  snprintf(path, sizeof path, "%s/ca.pub", dir);
  cr_assert_eq(relay_ca_load(path, pk), 0);
  snprintf(path, sizeof path, "%s/revoked_keys", dir);
  uint64_t serials[] = {5, 77};
  cr_assert_eq(signer_krl_write(path, pk, serials, 2, 2, time(NULL)), 0);
  cr_assert(hub_said("revoked set loaded from"));
  /* the load line above is from the start; wait for a second one */
  int loads = 0;
  for (int i = 0; i < 100 && loads < 2; i++) {
    sh("grep -c 'revoked set loaded' %s", logpath);
    loads = atoi(out);
    if (loads < 2)
      lt_sleep_ms(100);
  }
  cr_assert_geq(loads, 2, "the hub did not reload the KRL");
  cr_assert_eq(sh("rm -f %s/out", dir), 0);
  refused(via_hub("u", 1, echo_port), "certificate revoked");
}

/* ----------------------------------------------------- the hub on a bus */

/*
 * The hub follows a real nats-server: route rows decide the targets and
 * cert.revoked events revoke. A fake node relay (a libssh client in this
 * process, with a domain certificate) registers for cluster c2 with
 * tcpip-forward and echoes every forwarded-tcpip channel it is given.
 */
static lt_natsd natsd;
static bus_conn *busc;

typedef struct fake_relay {
  char name[32], cluster[32];
  pthread_t th;
  atomic_int stop, registered, channels, dport;
} fake_relay;

static fake_relay relay2;

/* A libssh session to the hub authenticated with dir/name and its
 * certificate, or NULL. */
static ssh_session
ssh_to_hub(const char *name) {
  return lt_ssh_to_hub("127.0.0.1", hub_port, dir, name);
}

static void
echo_channel(ssh_channel ch) {
  char buf[16384];
  int n;
  while ((n = ssh_channel_read(ch, buf, sizeof buf, 0)) > 0)
    if (ssh_channel_write(ch, buf, (uint32_t)n) != n)
      break;
  ssh_channel_send_eof(ch);
  ssh_channel_close(ch);
  ssh_channel_free(ch);
}

static void *
relay_main(void *arg) {
  fake_relay *r = arg;
  ssh_session s = ssh_to_hub(r->name);
  if (!s)
    return NULL;
  if (ssh_channel_listen_forward(s, r->cluster, 0, NULL) == SSH_OK)
    r->registered = 1;
  while (r->registered && !r->stop) {
    int dport = 0, oport = 0;
    char *orig = NULL;
    ssh_channel ch =
        ssh_channel_open_forward_port(s, 200, &dport, &orig, &oport);
    ssh_string_free_char(orig);
    if (!ch)
      continue;
    r->dport = dport;
    r->channels++;
    echo_channel(ch);
  }
  ssh_disconnect(s);
  ssh_free(s);
  return NULL;
}

static void
relay_start(fake_relay *r, const char *name, const char *cluster) {
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->cluster, sizeof r->cluster, "%s", cluster);
  cr_assert_eq(pthread_create(&r->th, NULL, relay_main, r), 0);
  for (int i = 0; i < 200 && !r->registered; i++)
    lt_sleep_ms(50);
  cr_assert(r->registered, "the fake relay did not register");
}

static void
append(const char *subject, const char *type, msgpack_sbuffer *sb) {
  bus_event ev;
  char id[33];
  memset(&ev, 0, sizeof ev);
  bus_event_new_id(id);
  ev.v = BUS_SCHEMA_VERSION;
  ev.type = type;
  ev.id = id;
  ev.ts = 1;
  ev.actor = "test";
  ev.cause = "";
  ev.data_mp = sb->data;
  ev.data_mp_len = sb->size;
  int rc = bus_append(busc, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(sb);
}

/* The row of pod (domain d, address ip, living in cluster pc) as the
 * relay of cluster c reads it. */
static void
route(const char *d, const char *c, const char *pod, const char *ip,
      const char *pc) {
  char subject[256];
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 7);
  bus_pack_kv_str(&b.pk, "domain", d);
  bus_pack_kv_str(&b.pk, "cluster", c);
  bus_pack_kv_str(&b.pk, "pod", pod);
  bus_pack_kv_str(&b.pk, "ip", ip);
  bus_pack_kv_str(&b.pk, "node", "n1");
  bus_pack_kv_str(&b.pk, "podCluster", pc);
  bus_pack_kv_str(&b.pk, "via", strcmp(c, pc) ? "hub" : "local");
  snprintf(subject, sizeof subject, "lark.route.%s.%s.%s", d, c, pod);
  append(subject, "route.set", &b.sb);
}

static void
revoke_serial(uint64_t serial) {
  char subject[64], hex[17];
  bus_packbuf b;
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)serial);
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "serial", hex);
  bus_pack_kv_str(&b.pk, "reason", "test");
  snprintf(subject, sizeof subject, "lark.ev.cert.%s", hex);
  append(subject, "cert.revoked", &b.sb);
}

static void
setup_bus(void) {
  prepare(1 << 20);
  cr_assert_eq(lt_natsd_start(&natsd, NULL, NULL), 0);
  cr_assert_eq(lt_connect(&natsd, &busc), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(busc, 2000), 0, "%s", bus_last_error());
  /* pods of d1: p1 in c2 (rows for both clusters), p2 in c3, p6 in c2 by
   * IPv6; a pod of d2 */
  route("d1", "c1", "p1", "10.2.0.5", "c2");
  route("d1", "c2", "p1", "10.2.0.5", "c2");
  route("d1", "c1", "p2", "10.2.0.7", "c3");
  route("d1", "c1", "p6", "fd00::5", "c2");
  route("d2", "c1", "q1", "10.3.0.5", "c2");
  start_hub_with(natsd.url);
  cr_assert(hub_said("following routes"));
  cert("ca", "r2", "-I 'relay2 role=domain domain=d1' -n domain:d1 -z 50");
  relay_start(&relay2, "r2", "c2");
  cr_assert(hub_said("cluster c2 registered"));
}

static void
teardown_bus(void) {
  relay2.stop = 1;
  if (relay2.th)
    pthread_join(relay2.th, NULL);
  teardown();
  bus_conn_close(busc);
  lt_natsd_stop(&natsd);
}

TestSuite(relay_hub_bus, .init = setup_bus, .fini = teardown_bus,
          .timeout = 120);

static int
same_sha(void) {
  return sh("cd %s && test \"$(sha256sum < in)\" = \"$(sha256sum < out)\"",
            dir) == 0;
}

Test(relay_hub_bus, forwards_to_the_relay_of_the_target_cluster) {
  cert("ca", "u", "-I 'u1 role=domain domain=d1' -n domain:d1 -z 21");
  cr_assert_eq(via_hub_to("u", 1, "10.2.0.5:80"), 0, "%s", err);
  cr_expect(same_sha(), "1 MiB through the relay came back different");
  cr_expect(hub_said("to 10.2.0.5:80 via relay c2"));
  cr_expect_eq(relay2.channels, 1);
  cr_expect_eq(relay2.dport, 80);
}

Test(relay_hub_bus, targets_outside_the_domain_are_refused) {
  cert("ca", "v", "-I 'v1 role=domain domain=d2' -n domain:d2 -z 22");
  refused(via_hub_to("v", 1, "10.2.0.5:80"),
          "target 10.2.0.5 is not a pod of domain d2");
  cert("ca", "u", "-I 'u1 role=domain domain=d1' -n domain:d1 -z 23");
  refused(via_hub_to("u", 1, "10.2.0.99:80"),
          "target 10.2.0.99 is not a pod of domain d1");
  cr_expect_neq(via_hub_to("u", 1, "10.2.0.7:80"), 0);
  cr_expect(hub_said("no relay for cluster c3"));
  cr_expect_eq(relay2.channels, 0);
}

Test(relay_hub_bus, relay_of_another_cluster_is_refused) {
  cert("ca", "r9",
       "-I 'relay9 role=domain domain=d1' -n domain:d1 -z 24 "
       "-O extension:cluster@larkbus=c9");
  ssh_session s = ssh_to_hub("r9");
  cr_assert(s, "the relay's session did not authenticate");
  cr_expect_neq(ssh_channel_listen_forward(s, "c2", 0, NULL), SSH_OK);
  cr_expect(hub_said("certificate is for cluster c9"));
  ssh_disconnect(s);
  ssh_free(s);
}

/* Open a direct-tcpip channel to target (the one-line form) and check
 * that "hello" comes back. */
static ssh_channel
echo_hello(ssh_session s, const char *target) {
  char buf[8] = "";
  ssh_channel ch = ssh_channel_new(s);
  cr_assert(ch);
  cr_assert_eq(ssh_channel_open_forward(ch, target, 0, "127.0.0.1", 4000),
               SSH_OK, "%s", ssh_get_error(s));
  cr_assert_eq(ssh_channel_write(ch, "hello", 5), 5);
  int got = 0;
  for (int i = 0; i < 50 && got < 5; i++) {
    int n =
        ssh_channel_read_timeout(ch, buf + got, (uint32_t)(5 - got), 0, 200);
    cr_assert_geq(n, 0);
    got += n;
  }
  cr_expect_str_eq(buf, "hello");
  return ch;
}

Test(relay_hub_bus, one_line_targets_and_revocation_of_an_open_session) {
  cert("ca", "u", "-I 'u1 role=domain domain=d1' -n domain:d1 -z 77");
  ssh_session s = ssh_to_hub("u");
  cr_assert(s, "the client did not authenticate");
  /* the fake relay serves one channel at a time: end the first */
  ssh_channel b = echo_hello(s, "tcp://10.2.0.5:80");
  ssh_channel_send_eof(b);
  char c;
  while (ssh_channel_read_timeout(b, &c, 1, 0, 2000) > 0)
    ;
  ssh_channel_close(b);
  ssh_channel_free(b);
  ssh_channel a = echo_hello(s, "tcp://[fd00::5]:8080");
  cr_expect(hub_said("to fd00::5:8080 via relay c2"));
  revoke_serial(77);
  cr_expect(hub_said("certificate 000000000000004d revoked"));
  cr_expect(hub_said("closing 127.0.0.1"));
  int closed = 0;
  for (int i = 0; i < 50 && !closed; i++) {
    int n = ssh_channel_read_timeout(a, &c, 1, 0, 100);
    closed = n < 0 || ssh_channel_is_eof(a) || !ssh_is_connected(s);
  }
  cr_expect(closed, "the revoked session stayed open");
  ssh_channel_free(a);
  ssh_disconnect(s);
  ssh_free(s);
  /* and a new session is refused */
  cr_expect_null(ssh_to_hub("u"));
  cr_expect(hub_said("(user u serial 77): certificate revoked"));
}
