/*
 * test_sched_records.c - the scheduler's records as its view stores them
 * (services/scheduler/records.c): packed as runs, unpacked to the same
 * bytes, and anything else refused, never read past.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

static pod_rec
a_pod(void) {
  pod_rec p;
  memset(&p, 0, sizeof p);
  p.version = SCHED_REC_VERSION;
  strcpy(p.name, "train-worker-17");
  strcpy(p.job, "train");
  strcpy(p.task, "train-worker");
  strcpy(p.node, "node-3");
  strcpy(p.phase, "Running");
  strcpy(p.desired, "Running");
  p.replica = 17;
  p.cpu_m = 2000;
  p.memory_mib = 4096;
  p.bound = 1;
  return p;
}

Test(sched_records, a_pod_packs_small_and_back) {
  pod_rec p = a_pod(), q;
  unsigned char packed[SCHED_REC_PACK_MAX];
  size_t n = sched_rec_pack(&p, sizeof p, packed);
  cr_assert_lt(n, sizeof p / 8, "%zu bytes packed of %zu", n, sizeof p);
  memset(&q, 0xee, sizeof q);
  cr_assert_eq(sched_rec_unpack(packed, n, &q, sizeof q), 0);
  cr_assert_eq(memcmp(&p, &q, sizeof p), 0);
  unsigned char again[SCHED_REC_PACK_MAX];
  cr_assert_eq(sched_rec_pack(&q, sizeof q, again), n);
  cr_assert_eq(memcmp(packed, again, n), 0, "equal records, equal bytes");
}

/* Records of every shape (zero runs long and short, none, at either
 * end, literals longer than a run can say) come back byte for byte. */
Test(sched_records, every_shape_round_trips) {
  srand(7);
  unsigned char packed[SCHED_REC_PACK_MAX];
  for (int i = 0; i < 3000; i++) {
    node_rec r, back;
    unsigned char *b = (unsigned char *)&r;
    int mode = i % 4;
    for (size_t k = 0; k < sizeof r; k++)
      b[k] = mode == 0   ? (unsigned char)(1 + rand() % 255)
             : mode == 1 ? 0
             : mode == 2 ? (rand() % 3 ? 0 : (unsigned char)rand())
                         : (rand() % 200 < 1 ? 0 : (unsigned char)rand());
    b[0] = SCHED_REC_VERSION;
    b[sizeof r - 1] = (unsigned char)(i & 1 ? 0 : 9);
    size_t n = sched_rec_pack(&r, sizeof r, packed);
    cr_assert_leq(n, SCHED_REC_PACK_MAX);
    cr_assert_eq(sched_rec_unpack(packed, n, &back, sizeof back), 0,
                 "shape %d, run %d", mode, i);
    cr_assert_eq(memcmp(&r, &back, sizeof r), 0, "shape %d, run %d", mode, i);
  }
}

Test(sched_records, what_is_not_one_is_refused) {
  pod_rec p = a_pod(), q;
  unsigned char packed[SCHED_REC_PACK_MAX];
  size_t n = sched_rec_pack(&p, sizeof p, packed);
  cr_assert_eq(sched_rec_unpack(&p, sizeof p, &q, sizeof q), BUS_ECORRUPT,
               "a record stored before runs (its raw struct)");
  cr_assert_eq(sched_rec_unpack(packed, n - 1, &q, sizeof q), BUS_ECORRUPT,
               "cut short");
  cr_assert_eq(sched_rec_unpack(packed, n, &q, sizeof q - 1), BUS_ECORRUPT,
               "of another size");
  cr_assert_eq(sched_rec_unpack(packed, 0, &q, sizeof q), BUS_ECORRUPT);
  pod_rec old = p;
  old.version = SCHED_REC_VERSION + 1;
  n = sched_rec_pack(&old, sizeof old, packed);
  cr_assert_eq(sched_rec_unpack(packed, n, &q, sizeof q), BUS_ECORRUPT,
               "another layout version");
  /* a literal that claims more bytes than follow */
  unsigned char cut[] = {SCHED_REC_PACKED, 0x7f, SCHED_REC_VERSION, 1, 2};
  cr_assert_eq(sched_rec_unpack(cut, sizeof cut, &q, sizeof q), BUS_ECORRUPT);
}

/* Random bytes: refused or exactly a record, never a write past it. */
Test(sched_records, random_bytes_never_overrun) {
  srand(11);
  unsigned char junk[512];
  struct {
    task_rec r;
    unsigned char guard[64];
  } out;
  for (int i = 0; i < 20000; i++) {
    size_t n = 1 + (size_t)(rand() % (int)sizeof junk);
    for (size_t k = 0; k < n; k++)
      junk[k] = (unsigned char)rand();
    junk[0] = SCHED_REC_PACKED;
    memset(out.guard, 0x5a, sizeof out.guard);
    int rc = sched_rec_unpack(junk, n, &out.r, sizeof out.r);
    cr_assert(rc == 0 || rc == BUS_ECORRUPT);
    for (size_t k = 0; k < sizeof out.guard; k++)
      cr_assert_eq(out.guard[k], 0x5a, "written past the record");
  }
}
