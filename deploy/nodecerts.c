/*
 * nodecerts.c - each local node's X.509 certificate, what its weights
 * server and fetcher prove themselves with (lark-edge --tls-dir): `larkctl
 * up` requests one per node through the signer, as `larkctl cert
 * request --role agent --name node-<i>` does (with --cluster c<i> under
 * --relay), before it starts the nodes, into
 *
 *   <data>/tls/node-<i>/cert.pem   the node's certificate (CN node-<i>)
 *   <data>/tls/node-<i>/key.pem    its key, 0600, made here, never sent
 *   <data>/tls/node-<i>/ca.pem     the platform CA (the signer's ca.pem)
 *
 * A certificate younger than half its validity is kept. Also the one way
 * deploy runs larkctl itself (lark_up_larkctl), shared with the relays'
 * domain certificates.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deploy-int.h"

#define NODE_CERT_VALID "30d"
#define NODE_CERT_RENEW_S (15 * 86400)

int
lark_up_larkctl(lark_up *u, const char *const *args, const char *logname) {
  char bin[PATH_MAX + 16], log[PATH_MAX + 64];
  const char *argv[24] = {bin, "--data", u->data};
  size_t n = 3;
  for (size_t i = 0; args[i] && n + 1 < sizeof argv / sizeof argv[0]; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  snprintf(bin, sizeof bin, "%s/larkctl", u->bin_dir);
  snprintf(log, sizeof log, "%s/logs/%s", u->data, logname);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
      dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  close(fd);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid)
    return -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void
lark_up_tls_dir(const lark_up *u, int node, char *out, size_t cap) {
  snprintf(out, cap, "%s/tls/node-%d", u->data, node);
}

/* dir/from renamed to dir/to. */
static int
move(const char *dir, const char *from, const char *to) {
  char a[PATH_MAX + 32], b[PATH_MAX + 32];
  snprintf(a, sizeof a, "%s/%s", dir, from);
  snprintf(b, sizeof b, "%s/%s", dir, to);
  return rename(a, b);
}

static int
copy_ca(lark_up *u, const char *dir) {
  char from[PATH_MAX + 64], to[PATH_MAX + 32], *pem = NULL;
  size_t len = 0;
  snprintf(from, sizeof from, "%s/views/lark-signer/ca.pem", u->data);
  snprintf(to, sizeof to, "%s/ca.pem", dir);
  int rc = dpl_read_all(from, &pem, &len);
  if (!rc)
    rc = dpl_write_atomic(to, pem, len);
  free(pem);
  return rc;
}

static int
request_node_cert(lark_up *u, int i) {
  char dir[PATH_MAX], out[PATH_MAX + 16], name[32], cl[16];
  lark_up_tls_dir(u, i, dir, sizeof dir);
  snprintf(out, sizeof out, "%s/node", dir);
  snprintf(name, sizeof name, "node-%d", i);
  snprintf(cl, sizeof cl, "c%d", i); /* as the pod network's clusters */
  const char *args[] = {"cert",
                        "request",
                        "--role",
                        "agent",
                        "--name",
                        name,
                        "--valid",
                        NODE_CERT_VALID,
                        "--out",
                        out,
                        u->relay ? "--cluster" : NULL,
                        cl,
                        NULL};
  if (lark_mkdirs(dir, 0700) < 0 ||
      lark_up_larkctl(u, args, "node-certs.log") < 0 ||
      move(dir, "node.key", "key.pem") || move(dir, "node.pem", "cert.pem"))
    return -1;
  return copy_ca(u, dir);
}

static int
fresh(const lark_up *u, int i) {
  char path[PATH_MAX + 16];
  struct stat st;
  lark_up_tls_dir(u, i, path, sizeof path - 16);
  strcat(path, "/cert.pem");
  return stat(path, &st) == 0 && time(NULL) - st.st_mtime < NODE_CERT_RENEW_S;
}

int
lark_up_node_certs(lark_up *u) {
  char ca[PATH_MAX + 64];
  if (!lark_bin_exists(u->bin_dir, "lark-signer"))
    return dpl_fail(BUS_EINVAL, "no lark-signer next to larkctl");
  snprintf(ca, sizeof ca, "%s/views/lark-signer/ca.pem", u->data);
  if (lark_wait_file(ca, NULL, 60000) < 0)
    return dpl_fail(BUS_EINVAL,
                    "the signer made no CA (%s): see %s/logs/"
                    "lark-signer.log",
                    ca, u->data);
  for (int i = 1; i <= u->nodes; i++) {
    /* the signer may take a moment to answer after making its CA */
    for (int t = 0; !fresh(u, i) && request_node_cert(u, i) < 0; t++) {
      if (t == 40 || lark_sup_stopping())
        return dpl_fail(BUS_EINVAL,
                        "no certificate for node-%d: see "
                        "%s/logs/node-certs.log",
                        i, u->data);
      bus_sleep_ms(500);
    }
  }
  return 0;
}
