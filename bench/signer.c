/*
 * signer.c - bench_signer: certificates per second, each beside the raw
 * library's signing rate measured in the same run.
 *
 *   bench_signer [--count N] [--clients C] [--workers W]
 *
 * Four figures per format: the raw signature (crypto_sign_detached for
 * Ed25519, EVP_DigestSign for P-256), signer_issue in one thread (parse
 * the public key or CSR, build, sign, encode), and issuing through the
 * broker: C client threads send sign commands to the signer's command
 * path (W serving threads; lark-signer's --workers, default 16), each answered
 * only after its cert.issued is stored in LARK_EVENTS. Targets: SSH >= 5,000/s,
 * X.509 >= 1,000/s through the broker.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "bench.h"
#include "natsd.h"
#include "signer.h"

#define NS 1000000000LL
#define MAX_WORKERS 32

static double
raw_ed25519(int n) {
  uint8_t pk[32], sk[64], sig[64], msg[400];
  crypto_sign_keypair(pk, sk);
  randombytes_buf(msg, sizeof msg);
  double t0 = bench_now_s();
  for (int i = 0; i < n; i++) {
    msg[0] = (uint8_t)i;
    crypto_sign_detached(sig, NULL, msg, sizeof msg, sk);
  }
  sodium_memzero(sk, sizeof sk);
  return n / (bench_now_s() - t0);
}

static double
raw_p256(int n) {
  EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
  unsigned char msg[600], sig[80];
  randombytes_buf(msg, sizeof msg);
  double t0 = bench_now_s();
  for (int i = 0; i < n; i++) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t len = sizeof sig;
    msg[0] = (unsigned char)i;
    EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k);
    EVP_DigestSign(ctx, sig, &len, msg, sizeof msg);
    EVP_MD_CTX_free(ctx);
  }
  double r = n / (bench_now_s() - t0);
  EVP_PKEY_free(k);
  return r;
}

/* A request's public part: an SSH key line or a CSR. */
typedef struct material {
  char ssh[256];
  char *csr;
} material;

static void
material_make(material *m) {
  uint8_t pk[32], sk[64];
  crypto_sign_keypair(pk, sk);
  sodium_memzero(sk, sizeof sk);
  signer_ssh_pub_format(pk, "b", m->ssh, sizeof m->ssh);
  char *key;
  size_t klen;
  if (signer_x509_request("bench", &key, &klen, &m->csr))
    exit(1);
  sodium_free(key);
}

static double
lib_issue(const signer_ca *ca, const material *m, int x509, int n) {
  signer_req r = {.role = x509 ? "agent" : "domain",
                  .name = "bench",
                  .domain = "d1",
                  .csr = m->csr,
                  .csr_len = strlen(m->csr),
                  .ssh_key = m->ssh,
                  .ssh_key_len = strlen(m->ssh)};
  r.not_before = (int64_t)time(NULL) * NS;
  r.not_after = r.not_before + 3600 * NS;
  char err[256];
  double t0 = bench_now_s();
  for (int i = 0; i < n; i++) {
    signer_cert c;
    if (signer_issue(ca, &r, &c, err, sizeof err)) {
      fprintf(stderr, "issue: %s\n", err);
      exit(1);
    }
    signer_cert_clear(&c);
  }
  return n / (bench_now_s() - t0);
}

/* ------------------------------------------------------- through the broker */

typedef struct world {
  bus_conn *c;
  bus_view *v;
  signer_ca *ca;
  signer_limits limits;
} world;

static void
on_cmd(bus_conn *c, const bus_cmd *cmd, void *ud) {
  world *w = ud;
  signer_command(c, cmd, w->v, w->ca, &w->limits);
}

typedef struct client {
  world *w;
  const material *m;
  int x509, n, failed;
} client;

static void *
client_thread(void *ud) {
  client *cl = ud;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  for (int i = 0; i < cl->n; i++) {
    char key[33];
    bus_event_new_id(key);
    msgpack_sbuffer_clear(&sb);
    msgpack_packer p;
    msgpack_packer_init(&p, &sb, msgpack_sbuffer_write);
    const char *kv[] = {"key",
                        key,
                        "role",
                        cl->x509 ? "agent" : "domain",
                        "name",
                        "bench",
                        "domain",
                        "d1",
                        cl->x509 ? "csr" : "sshKey",
                        cl->x509 ? cl->m->csr : cl->m->ssh};
    msgpack_pack_map(&p, 5);
    for (int k = 0; k < 10; k++)
      msgpack_pack_str_with_body(&p, kv[k], strlen(kv[k]));
    void *rep = NULL;
    size_t len = 0;
    int rc = bus_conn_request(cl->w->c, "lark.cmd.admin.cert.sign", sb.data,
                              sb.size, 10000, &rep, &len);
    if (rc || !memmem(rep, len, "serial", 6))
      cl->failed++;
    free(rep);
  }
  msgpack_sbuffer_destroy(&sb);
  return NULL;
}

static double
broker_issue(world *w, const material *m, int x509, int n, int clients) {
  pthread_t th[64];
  client cl[64];
  double t0 = bench_now_s();
  for (int i = 0; i < clients; i++) {
    cl[i] = (client){.w = w, .m = m, .x509 = x509, .n = n / clients};
    pthread_create(&th[i], NULL, client_thread, &cl[i]);
  }
  int failed = 0;
  for (int i = 0; i < clients; i++) {
    pthread_join(th[i], NULL);
    failed += cl[i].failed;
  }
  double r = (n / clients) * clients / (bench_now_s() - t0);
  if (failed)
    fprintf(stderr, "%d requests failed\n", failed);
  return failed ? 0 : r;
}

static int
world_open(world *w, lt_natsd *srv, const char *dir) {
  char path[512];
  memset(w, 0, sizeof *w);
  signer_limits_init(&w->limits);
  if (lt_natsd_start(srv, NULL, NULL) || lt_connect(srv, &w->c) ||
      lt_streams(w->c, 120000))
    return -1;
  snprintf(path, sizeof path, "%s/ca", dir);
  if (signer_ca_open(path, &w->ca, NULL))
    return -1;
  bus_view_def def;
  signer_view_def(&def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  snprintf(path, sizeof path, "%s/view", dir);
  vo.dir = path;
  return bus_view_open(&w->v, &def, &vo);
}

int
main(int argc, char **argv) {
  int n = 20000, clients = 16, workers = SIGNER_WORKERS;
  const bench_opt opts[] = {{"--count", .i = &n},
                            {"--clients", .i = &clients},
                            {"--workers", .i = &workers},
                            {NULL}};
  bench_opts(argc, argv, opts);
  if (n < 1 || clients < 1 || clients > 64 || workers < 1 ||
      workers > MAX_WORKERS || sodium_init() < 0)
    return 2;
  char dir[256];
  lt_tmpdir(dir, sizeof dir, "bench-signer");
  lt_natsd srv;
  world w;
  material m;
  material_make(&m);
  if (world_open(&w, &srv, dir)) {
    fprintf(stderr, "setup: %s\n", bus_last_error());
    return 1;
  }
  bench_loop svc = {.c = w.c, .v = w.v};
  bus_service_opts_init(&svc.opts);
  svc.opts.name = "signer";
  svc.opts.filter = "lark.ev.cert.>";
  bench_loop_start(&svc);
  bus_serve *q[MAX_WORKERS];
  for (int i = 0; i < workers; i++)
    bus_cmd_serve(w.c, "cert", on_cmd, &w, &q[i]);

  double ed = raw_ed25519(n), ssh_lib = lib_issue(w.ca, &m, 0, n);
  double ssh_bus = broker_issue(&w, &m, 0, n, clients);
  int nx = n / 4 > 0 ? n / 4 : 1;
  double p256 = raw_p256(nx), x_lib = lib_issue(w.ca, &m, 1, nx);
  double x_bus = broker_issue(&w, &m, 1, nx, clients);
  printf("ssh  certs: %8.0f/s through the broker (%d clients, %d workers), "
         "%8.0f/s "
         "signer_issue; raw crypto_sign_detached %8.0f/s  [target >= 5000]\n",
         ssh_bus, clients, workers, ssh_lib, ed);
  printf("x509 certs: %8.0f/s through the broker (%d clients, %d workers), "
         "%8.0f/s "
         "signer_issue; raw EVP_DigestSign P-256 %8.0f/s  [target >= 1000]\n",
         x_bus, clients, workers, x_lib, p256);

  for (int i = 0; i < workers; i++)
    bus_conn_unserve(q[i]);
  bench_loop_stop(&svc);
  bus_view_close(w.v);
  signer_ca_free(w.ca);
  free(m.csr);
  bus_conn_close(w.c);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  return ssh_bus > 0 && x_bus > 0 ? 0 : 1;
}
