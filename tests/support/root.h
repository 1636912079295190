/*
 * root.h - for the tests that need root (network namespaces, veths,
 * nftables, an sshd that switches users). Without it they skip, saying
 * "needs root", which ctest (label root) reports as skipped rather than
 * passed or failed. CI runs them as root.
 */
#ifndef LT_ROOT_H
#define LT_ROOT_H

#include <criterion/criterion.h>
#include <unistd.h>

#define lt_need_root(what)                                                     \
  do {                                                                         \
    if (geteuid() != 0)                                                        \
      cr_skip_test("needs root (%s): run it as root, as CI does", what);       \
  } while (0)

#endif
