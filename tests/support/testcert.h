/*
 * testcert.h - TLS certificates for tests and benchmarks of the edge
 * sites, from a test CA made with openssl (the platform's signer is
 * tested on its own; a site's files take any CA's).
 */
#ifndef LARK_TEST_TESTCERT_H
#define LARK_TEST_TESTCERT_H

/* A certificate from the test CA in cadir (made there first when
 * missing) into outdir/{cert,key,ca}.pem, CN cn, for the loopback
 * address, client and server: 0 or -1. */
int lt_test_cert(const char *cadir, const char *outdir, const char *cn);

#endif
