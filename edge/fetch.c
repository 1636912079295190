/*
 * fetch.c - a pod's artifact, fetched with libcurl by the pod's shim in
 * the pod's working directory, before the pod's namespace is entered
 * (the node's network fetches it, as the node's trust checks it).
 *
 * Limits: file, http and https only, redirects (at most 5) to http and
 * https only; 30 s to connect; given up when slower than 1 KiB/s for
 * 60 s, after opts->timeout_s in all, or past opts->max_bytes. https
 * checks the server against the system's CAs and opts->ca_file.
 *
 * libcurl is loaded (dlopen) by the first fetch, not linked: its
 * dependencies (TLS stacks, Kerberos, LDAP, ...) cost every process that
 * links them about 10 ms to start, and the shim starts with every pod and
 * robot while few of them fetch anything.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "edge.h"
#include "fetch.h"

/* The libcurl calls fetch.c makes, from the library loaded at run time. */
static struct {
  CURLcode (*global_init)(long flags);
  void (*global_cleanup)(void);
  CURL *(*easy_init)(void);
  CURLcode (*easy_setopt)(CURL *c, CURLoption o, ...);
  CURLcode (*easy_perform)(CURL *c);
  void (*easy_cleanup)(CURL *c);
  const char *(*easy_strerror)(CURLcode rc);
  curl_version_info_data *(*version_info)(CURLversion v);
} cu;

/* Load libcurl and initialise it; 0, or -1 with why. */
static int
load_curl(char *why, size_t cap) {
  void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    h = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
  struct {
    void **fn;
    const char *name;
  } syms[] = {{(void **)&cu.global_init, "curl_global_init"},
              {(void **)&cu.global_cleanup, "curl_global_cleanup"},
              {(void **)&cu.easy_init, "curl_easy_init"},
              {(void **)&cu.easy_setopt, "curl_easy_setopt"},
              {(void **)&cu.easy_perform, "curl_easy_perform"},
              {(void **)&cu.easy_cleanup, "curl_easy_cleanup"},
              {(void **)&cu.easy_strerror, "curl_easy_strerror"},
              {(void **)&cu.version_info, "curl_version_info"}};
  for (size_t i = 0; h && i < sizeof syms / sizeof *syms; i++)
    if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
      snprintf(why, cap, "cannot fetch artifacts: libcurl has no %s",
               syms[i].name);
      return -1;
    }
  if (!h) {
    snprintf(why, cap, "cannot fetch artifacts: cannot load libcurl: %.300s",
             dlerror());
    return -1;
  }
  if (cu.global_init(CURL_GLOBAL_DEFAULT)) {
    snprintf(why, cap, "cannot fetch artifacts: curl_global_init");
    return -1;
  }
  return 0;
}

typedef struct sink {
  int fd;
  uint64_t got, max;
  int too_big, write_failed;
  EVP_MD_CTX *md;
  volatile sig_atomic_t *stop;
} sink;

static size_t
on_data(char *buf, size_t size, size_t n, void *ud) {
  sink *s = ud;
  size_t len = size * n;
  if (s->got + len > s->max) {
    s->too_big = 1;
    return 0;
  }
  s->got += len;
  EVP_DigestUpdate(s->md, buf, len);
  for (size_t off = 0; off < len;) {
    ssize_t w = write(s->fd, buf + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      s->write_failed = errno ? errno : EIO;
      return 0;
    }
    off += (size_t)w;
  }
  return len;
}

static int
on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut,
            curl_off_t un) {
  (void)dt, (void)dn, (void)ut, (void)un;
  const sink *s = ud;
  return s->stop && *s->stop ? 1 : 0;
}

static void
set_trust(CURL *c, const char *ca_file) {
  if (!ca_file || !*ca_file)
    return; /* libcurl's own: the system's bundle */
  /* the node's CA file, and the system's CAs through their directory */
  const curl_version_info_data *v = cu.version_info(CURLVERSION_NOW);
  cu.easy_setopt(c, CURLOPT_CAINFO, ca_file);
  cu.easy_setopt(c, CURLOPT_CAPATH,
                 v && v->capath ? v->capath : "/etc/ssl/certs");
}

static CURL *
make_handle(const lark_artifact *a, const edge_fetch_opts *o, sink *s,
            char *err) {
  CURL *c = cu.easy_init();
  if (!c)
    return NULL;
  cu.easy_setopt(c, CURLOPT_URL, a->url);
  cu.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "file,http,https");
  cu.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  cu.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  cu.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  cu.easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  cu.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  cu.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  cu.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  cu.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  cu.easy_setopt(c, CURLOPT_TIMEOUT, o->timeout_s > 0 ? o->timeout_s : 0L);
  cu.easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_bytes);
  cu.easy_setopt(c, CURLOPT_USERAGENT, "lark-edge/" EDGE_VERSION);
  cu.easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  cu.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  cu.easy_setopt(c, CURLOPT_WRITEDATA, s);
  cu.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  cu.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  cu.easy_setopt(c, CURLOPT_XFERINFODATA, s);
  set_trust(c, o->ca_file);
  return c;
}

/* The transfer into s; 0, or -1 with why. */
static int
transfer(const lark_artifact *a, const edge_fetch_opts *o, sink *s, char *why,
         size_t cap) {
  char err[CURL_ERROR_SIZE] = "";
  CURL *c = make_handle(a, o, s, err);
  if (!c) {
    snprintf(why, cap, "cannot fetch artifact: curl_easy_init failed (%.300s)",
             a->url);
    return -1;
  }
  CURLcode rc = cu.easy_perform(c);
  cu.easy_cleanup(c);
  if (rc == CURLE_OK)
    return 0;
  if (s->too_big || rc == CURLE_FILESIZE_EXCEEDED)
    snprintf(why, cap,
             "artifact larger than this node's limit of %llu bytes (%.300s)",
             (unsigned long long)o->max_bytes, a->url);
  else if (s->write_failed)
    snprintf(why, cap, "cannot write artifact %.200s: %s", a->name,
             strerror(s->write_failed));
  else if (s->stop && *s->stop)
    snprintf(why, cap, "stopped while fetching artifact (%.300s)", a->url);
  else
    snprintf(why, cap, "cannot fetch artifact: %s (%.300s)",
             err[0] ? err : cu.easy_strerror(rc), a->url);
  return -1;
}

/* Compare the digest with a->sha256 (when given); 0 or -1 with why. */
static int
verify(const lark_artifact *a, EVP_MD_CTX *md, char *why, size_t cap) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int dl = 0;
  char hex[2 * EVP_MAX_MD_SIZE + 1];
  if (!EVP_DigestFinal_ex(md, d, &dl)) {
    snprintf(why, cap, "cannot compute the artifact's sha256 (%.300s)", a->url);
    return -1;
  }
  for (unsigned i = 0; i < dl; i++)
    snprintf(hex + 2 * i, 3, "%02x", d[i]);
  if (!a->sha256[0] || !strcmp(hex, a->sha256))
    return 0;
  snprintf(why, cap, "artifact sha256 mismatch: got %s, expected %s (%.300s)",
           hex, a->sha256, a->url);
  return -1;
}

int
edge_fetch(const lark_artifact *a, const edge_fetch_opts *o, char *why,
           size_t cap) {
  char tmp[] = ".lark-artifact-XXXXXX";
  if (load_curl(why, cap))
    return -1;
  sink s = {.fd = mkstemp(tmp), .max = o->max_bytes, .stop = o->stop};
  if (s.fd < 0) {
    cu.global_cleanup();
    snprintf(why, cap, "cannot make a file for artifact %.200s: %s", a->name,
             strerror(errno));
    return -1;
  }
  s.md = EVP_MD_CTX_new();
  int rc = -1;
  if (!s.md || !EVP_DigestInit_ex(s.md, EVP_sha256(), NULL))
    snprintf(why, cap, "cannot compute the artifact's sha256 (%.300s)", a->url);
  else if (!transfer(a, o, &s, why, cap) && !verify(a, s.md, why, cap))
    rc = 0;
  EVP_MD_CTX_free(s.md);
  if (!rc && (fsync(s.fd) < 0 || fchmod(s.fd, 0644) < 0)) {
    snprintf(why, cap, "cannot write artifact %.200s: %s", a->name,
             strerror(errno));
    rc = -1;
  }
  close(s.fd);
  if (!rc && rename(tmp, a->name) < 0) {
    snprintf(why, cap, "cannot name artifact %.200s: %s", a->name,
             strerror(errno));
    rc = -1;
  }
  if (rc)
    unlink(tmp);
  cu.global_cleanup();
  return rc;
}
