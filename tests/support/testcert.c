/*
 * testcert.c - certificates from a test CA, made with openssl (see
 * testcert.h).
 */
#include "testcert.h"

#include <stdio.h>
#include <unistd.h>

#include "proc.h"

#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

int
lt_test_cert(const char *cadir, const char *outdir, const char *cn) {
  char out[4096], err[4096];
  if (access(cadir, F_OK) != 0 &&
      sh("mkdir -p '%s' && cd '%s' && openssl req -x509 -newkey ec "
         "-pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem "
         "-days 2 -subj /CN=test-ca",
         cadir, cadir) != 0)
    return -1;
  int rc = sh("mkdir -p '%s' && cd '%s' && openssl req -newkey ec "
              "-pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem "
              "-out req.csr -subj /CN=%s && printf "
              "'subjectAltName=IP:127.0.0.1,DNS:%s\\nextendedKeyUsage="
              "serverAuth,clientAuth\\n' > ext && openssl x509 -req -in "
              "req.csr -CA '%s/ca.pem' -CAkey '%s/ca.key' -CAcreateserial "
              "-out cert.pem -days 2 -extfile ext && cp '%s/ca.pem' ca.pem "
              "&& rm -f req.csr ext",
              outdir, outdir, cn, cn, cadir, cadir, cadir);
  if (rc)
    fprintf(stderr, "openssl: %s\n", err);
  return rc ? -1 : 0;
}
