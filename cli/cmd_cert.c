/*
 * cmd_cert.c - larkctl cert: certificates from the platform's CA.
 *
 *   larkctl cert request --role ROLE --name NAME [--domain D] [--cluster C]
 *                        [--agent A] [--host H]... [--out PREFIX]
 *                        [--valid DURATION]
 *   larkctl cert revoke SERIAL [--reason TEXT]
 *   larkctl cert list [--role ROLE]
 *   larkctl cert show SERIAL
 *   larkctl cert ca
 *
 * request makes the key pair here and sends only a CSR (roles admin,
 * agent, peer, user, gateway: X.509, ECDSA P-256) or an Ed25519 public key
 * (roles domain, ssh-guest: OpenSSH). A user certificate logs a person
 * into lark-gateway's HTTPS (the CN is the user); a gateway certificate is
 * that server's, for loopback and each --host (an address or DNS name). It
 * writes PREFIX.key (0600) and, once the signer answers, PREFIX.pem or
 * PREFIX-cert.pub and PREFIX.pub. The private key never leaves this process
 * except into PREFIX.key, and the memory that held it is wiped. revoke returns
 * once cert.revoked is stored. revoke and show take a serial as cert list,
 * openssl x509 -serial or ssh-keygen -L print it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "cli.h"
#include "deploy.h"
#include "kinds.h"
#include "signer.h"

#define USAGE                                                                  \
  "larkctl cert request --role ROLE --name NAME [--domain D] [--cluster C] "   \
  "[--agent A] [--host H]... [--out PREFIX] [--valid DURATION]\n"              \
  "       (roles: admin, agent, peer, user, gateway, domain, ssh-guest)\n"     \
  "       larkctl cert revoke SERIAL [--reason TEXT]\n"                        \
  "       larkctl cert list [--role ROLE]\n"                                   \
  "       larkctl cert show SERIAL\n"                                          \
  "       larkctl cert ca"

typedef struct req_args {
  const char *role, *name, *domain, *cluster, *agent, *out, *reason;
  const char *hosts[SIGNER_MAX_HOSTS];
  int nhosts;
  int64_t valid_s;
} req_args;

/* Key material made here: the private file's text and the public part
 * sent to the signer. */
typedef struct keys {
  char *priv; /* sodium memory */
  size_t priv_len;
  char *csr;     /* X.509 */
  char pub[256]; /* SSH */
} keys;

/* "90s", "15m", "24h", "30d" or seconds, at most ten years. */
static int64_t
duration_s(const char *s) {
  int64_t ns;
  if (bus_duration_parse(s, 1e9, &ns) < 0 || ns <= 0 ||
      ns > INT64_C(3650) * 86400 * 1000000000)
    return -1;
  return ns / 1000000000;
}

static int
parse_request(int argc, char **argv, req_args *a) {
  memset(a, 0, sizeof *a);
  for (int i = 2; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    const char **slot = !strcmp(f, "--role")      ? &a->role
                        : !strcmp(f, "--name")    ? &a->name
                        : !strcmp(f, "--domain")  ? &a->domain
                        : !strcmp(f, "--cluster") ? &a->cluster
                        : !strcmp(f, "--agent")   ? &a->agent
                        : !strcmp(f, "--out")     ? &a->out
                                                  : NULL;
    if (slot && v) {
      *slot = argv[++i];
    } else if (!strcmp(f, "--valid") && v) {
      if ((a->valid_s = duration_s(argv[++i])) < 0)
        return -1;
    } else if (!strcmp(f, "--host") && v && a->nhosts < SIGNER_MAX_HOSTS) {
      a->hosts[a->nhosts++] = argv[++i];
    } else {
      return -1;
    }
  }
  if (!a->role || !a->name || !signer_role_format(a->role))
    return -1;
  if (!a->out)
    a->out = a->name;
  return 0;
}

static int
make_keys(const req_args *a, keys *k) {
  memset(k, 0, sizeof *k);
  if (signer_role_format(a->role) == SIGNER_X509)
    return signer_x509_request(a->name, &k->priv, &k->priv_len, &k->csr);
  uint8_t pk[crypto_sign_PUBLICKEYBYTES];
  uint8_t *sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
  if (!sk)
    return -ENOMEM;
  crypto_sign_keypair(pk, sk);
  int rc = signer_ssh_private_format(pk, sk, a->name, &k->priv, &k->priv_len);
  sodium_free(sk); /* wipes */
  if (!rc)
    rc = signer_ssh_pub_format(pk, a->name, k->pub, sizeof k->pub);
  return rc;
}

static void
keys_free(keys *k) {
  sodium_free(k->priv);
  free(k->csr);
  memset(k, 0, sizeof *k);
}

static int
pack_request(msgpack_sbuffer *sb, const req_args *a, const keys *k) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  char key[33];
  bus_event_new_id(key);
  bus_map m;
  bus_map_begin(&m, &pk);
  bus_map_str(&m, "key", key);
  bus_map_str(&m, "role", a->role);
  bus_map_str(&m, "name", a->name);
  if (k->csr)
    bus_map_str(&m, "csr", k->csr);
  else
    bus_map_str(&m, "sshKey", k->pub);
  bus_map_uint(&m, "valid", (uint64_t)a->valid_s);
  if (a->domain)
    bus_map_str(&m, "domain", a->domain);
  if (a->cluster)
    bus_map_str(&m, "cluster", a->cluster);
  if (a->agent)
    bus_map_str(&m, "agent", a->agent);
  if (a->nhosts) {
    msgpack_packer *h = bus_map_key(&m, "hosts");
    msgpack_pack_array(h, (uint32_t)a->nhosts);
    for (int i = 0; i < a->nhosts; i++)
      bus_pack_str(h, a->hosts[i]);
  }
  return bus_map_end(&m);
}

/* Write PREFIX.key and the certificate files from the reply. */
static int
save(const req_args *a, const keys *k, const msgpack_object *reply,
     char *certpath, size_t cap) {
  char path[4096], cert[16400] = "";
  int ssh = !k->csr;
  if (!bus_obj_str(reply, "cert", cert, sizeof cert))
    return cli_fail("cert request", 0, "the reply holds no certificate");
  snprintf(path, sizeof path, "%s.key", a->out);
  int rc = bus_file_write(path, k->priv, k->priv_len, 0600);
  snprintf(certpath, cap, "%s%s", a->out, ssh ? "-cert.pub" : ".pem");
  if (ssh)
    strcat(cert, "\n");
  if (!rc)
    rc = bus_file_write(certpath, cert, strlen(cert), 0644);
  if (!rc && ssh) {
    char pub[300];
    snprintf(path, sizeof path, "%s.pub", a->out);
    snprintf(pub, sizeof pub, "%s\n", k->pub);
    rc = bus_file_write(path, pub, strlen(pub), 0644);
  }
  if (rc)
    return cli_fail("cert request", rc, "writing %s files", a->out);
  return CLI_OK;
}

static void
print_issued(const lark_cli *cli, const msgpack_object *reply,
             const char *certpath, const req_args *a) {
  if (cli->output == CLI_OUT_JSON) {
    char *j = cli_obj_to_json(reply);
    printf("%s\n", j ? j : "{}");
    free(j);
    return;
  }
  char serial[64] = "", format[8] = "", until[40];
  bus_obj_str(reply, "serial", serial, sizeof serial);
  bus_obj_str(reply, "format", format, sizeof format);
  cli_format_time(bus_obj_int(reply, "notAfter", 0), until, sizeof until);
  printf("issued %s %s certificate %s for %s, valid until %s\n"
         "key  %s.key\ncert %s\n",
         format, a->role, serial, a->name, until, a->out, certpath);
}

static int
cert_request(int argc, char **argv, lark_cli *cli) {
  req_args a;
  keys k;
  char certpath[4200];
  if (parse_request(argc, argv, &a))
    return cli_usage(USAGE);
  if (sodium_init() < 0 || make_keys(&a, &k))
    return cli_fail("cert request", 0, "could not make a key pair");
  bus_conn *c = cli_connect(cli);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object reply;
  int rc = CLI_ERR;
  if (c && pack_request(&sb, &a, &k) < 0)
    rc = cli_fail("cert request", 0, "%s", bus_last_error());
  else if (c)
    rc = cli_call(cli, c, "cert", "sign", &sb, &z, &reply);
  if (rc == CLI_OK &&
      (rc = save(&a, &k, &reply, certpath, sizeof certpath)) == CLI_OK)
    print_issued(cli, &reply, certpath, &a);
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
  keys_free(&k);
  bus_conn_close(c);
  return rc;
}

/* --------------------------------------------------- revoke, list, show */

/* One call with a body of string pairs (NULL-terminated k, v list). */
static int
call(lark_cli *cli, const char *verb, const char *const *kv, msgpack_zone *z,
     msgpack_object *reply) {
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  bus_packbuf b;
  bus_packbuf_init(&b);
  char key[33];
  bus_event_new_id(key);
  bus_map m;
  bus_map_begin(&m, &b.pk);
  bus_map_str(&m, "key", key);
  for (size_t i = 0; kv[i]; i += 2)
    bus_map_str(&m, kv[i], kv[i + 1]);
  int rc = bus_map_end(&m) < 0
               ? cli_fail("cert", 0, "%s", bus_last_error())
               : cli_call(cli, c, "cert", verb, &b.sb, z, reply);
  bus_packbuf_destroy(&b);
  bus_conn_close(c);
  return rc;
}

static void
print_json(const msgpack_object *o) {
  char *j = cli_obj_to_json(o);
  printf("%s\n", j ? j : "null");
  free(j);
}

#define SERIAL_FORMS                                                           \
  "a serial as larkctl cert list prints it (16 or 32 hex digits), as "         \
  "openssl x509 -serial prints it (serial=4A3B..., colons allowed), or as "    \
  "ssh-keygen -L prints it (Serial: 1234..., a decimal number)"

/* Hex digits of s into out, lower-cased, colons dropped, zero-padded on
 * the left to the platform's widths: 16 digits for SSH serials, 32 for
 * X.509. openssl prints an X.509 serial's minimal bytes, so a serial whose
 * top byte is small comes out shorter than the platform's form. */
static int
serial_from_hex(const char *s, char out[SIGNER_SERIAL_MAX]) {
  char digits[SIGNER_SERIAL_MAX];
  size_t n = 0;
  for (; *s; s++) {
    if (*s == ':')
      continue;
    if (!isxdigit((unsigned char)*s) || n == SIGNER_SERIAL_MAX - 1)
      return -1;
    digits[n++] = (char)tolower((unsigned char)*s);
  }
  if (!n)
    return -1;
  digits[n] = 0;
  size_t width = n <= 16 ? 16 : 32;
  memset(out, '0', width - n);
  memcpy(out + width - n, digits, n + 1);
  return 0;
}

/* A decimal SSH serial (ssh-keygen -L) as the signer names it: the
 * 64-bit value in 16 lower-case hex digits (see ssh_issue). */
static int
serial_from_decimal(const char *s, char out[SIGNER_SERIAL_MAX]) {
  char *end;
  errno = 0;
  uint64_t v = strtoull(s, &end, 10);
  if (errno || *end || !v)
    return -1;
  snprintf(out, SIGNER_SERIAL_MAX, "%016" PRIx64, v);
  return 0;
}

/* The platform's serial for what a person pasted: larkctl's own form,
 * openssl's "serial=4A:3B..." in any case, or ssh-keygen's decimal.
 * Digits alone are ambiguous; 16 or 32 of them are read as hex (larkctl's
 * form), any other count as decimal. The signer's SSH serials are at
 * least 2^56, 17 or more decimal digits, so its own never collide. */
static int
serial_normalise(const char *in, char out[SIGNER_SERIAL_MAX]) {
  while (isspace((unsigned char)*in))
    in++;
  int hex = 0;
  if (!strncasecmp(in, "serial=", 7) || !strncasecmp(in, "0x", 2)) {
    in += in[1] == 'x' || in[1] == 'X' ? 2 : 7;
    hex = 1;
  }
  char s[128];
  size_t n = strlen(in);
  while (n && isspace((unsigned char)in[n - 1]))
    n--;
  if (n >= sizeof s)
    return -1;
  memcpy(s, in, n);
  s[n] = 0;
  if (!hex && n != 16 && n != 32 && n && strspn(s, "0123456789") == n)
    return serial_from_decimal(s, out);
  return serial_from_hex(s, out);
}

/* serial_normalise, or a message naming the forms accepted. */
static int
serial_arg(const char *cmd, const char *in, char out[SIGNER_SERIAL_MAX]) {
  if (!serial_normalise(in, out))
    return CLI_OK;
  cli_fail(cmd, 0, "%s is not a certificate serial; give " SERIAL_FORMS, in);
  return CLI_USAGE;
}

static int
cert_revoke(int argc, char **argv, lark_cli *cli) {
  static const char *const flags[] = {"--reason", NULL};
  const char *serial = NULL, *reason = NULL;
  if (cli_take_args(argc, argv, 2, flags, &reason, &serial, 1) != 1)
    return cli_usage(USAGE);
  char norm[SIGNER_SERIAL_MAX];
  if (serial_arg("cert revoke", serial, norm))
    return CLI_USAGE;
  serial = norm;
  const char *kv[] = {"serial", serial, reason ? "reason" : NULL, reason, NULL};
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object reply;
  int rc = call(cli, "revoke", kv, &z, &reply);
  if (rc == CLI_OK && cli->output == CLI_OUT_JSON)
    print_json(&reply);
  else if (rc == CLI_OK)
    printf("revoked %s (seq %lld)\n", serial,
           (long long)bus_obj_int(&reply, "seq", 0));
  msgpack_zone_destroy(&z);
  return rc;
}

static int
cert_query(int argc, char **argv, lark_cli *cli) {
  static const char *const role[] = {"--role", NULL};
  int list = !strcmp(argv[1], "list");
  const char *arg = NULL;
  int n = cli_take_args(argc, argv, 2, list ? role : NULL, &arg, &arg, !list);
  if (n < 0 || (!list && !arg))
    return cli_usage(USAGE);
  char norm[SIGNER_SERIAL_MAX];
  if (!list && serial_arg("cert show", arg, norm))
    return CLI_USAGE;
  if (!list)
    arg = norm;
  const char *kv[] = {list ? "role" : "serial", arg, NULL};
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object reply;
  int rc = call(cli, argv[1], arg ? kv : kv + 2, &z, &reply);
  const msgpack_object *res =
      rc == CLI_OK ? bus_obj_get(&reply, "result") : NULL;
  if (rc == CLI_OK && !res)
    rc = cli_fail(argv[1], 0, "the reply holds no result");
  else if (res && cli->output == CLI_OUT_JSON)
    print_json(res);
  else if (res && list)
    cli_print_table(res, &cli_cert_kind, cli->output);
  else if (res)
    cli_describe_print(res, 0);
  msgpack_zone_destroy(&z);
  return rc;
}

static int
cert_ca(lark_cli *cli) {
  const char *kv[] = {NULL};
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object reply;
  int rc = call(cli, "ca", kv, &z, &reply);
  char pem[8192] = "", ssh[512] = "";
  if (rc == CLI_OK && cli->output == CLI_OUT_JSON) {
    print_json(&reply);
  } else if (rc == CLI_OK) {
    bus_obj_str(&reply, "pem", pem, sizeof pem);
    bus_obj_str(&reply, "sshPublicKey", ssh, sizeof ssh);
    printf("%s%s\n", pem, ssh);
  }
  msgpack_zone_destroy(&z);
  return rc;
}

int
cmd_cert(int argc, char **argv, lark_cli *cli) {
  if (argc < 2)
    return cli_usage(USAGE);
  if (!strcmp(argv[1], "request"))
    return cert_request(argc, argv, cli);
  if (!strcmp(argv[1], "revoke"))
    return cert_revoke(argc, argv, cli);
  if (!strcmp(argv[1], "list") || !strcmp(argv[1], "show"))
    return cert_query(argc, argv, cli);
  if (!strcmp(argv[1], "ca") && argc == 2)
    return cert_ca(cli);
  return cli_usage(USAGE);
}
