/*
 * test_reader.c - ordered reading between bounds: from_seq, until_seq,
 * until_ns, since_ns, a filter, EOF, and follow mode.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "bus.h"
#include "bed.h"
#include "events.h"
#include "natsd.h"
#include "wait.h"

static void
put_n(lt_fixture *f, const char *subject, int n) {
  bus_event ev;
  char id[33];
  lt_sample_event(&ev, id, "sample.created", &f->data);
  for (int i = 0; i < n; i++) {
    bus_event_new_id(id);
    cr_assert_eq(bus_append_async(f->c, subject, &ev, 0), 0);
  }
  cr_assert_eq(bus_append_flush(f->c, 5000, NULL), 0, "%s", bus_last_error());
}

/* Read everything; check order and return count, first and last seq. */
static size_t
read_all(lt_fixture *f, bus_reader_opts *o, uint64_t *first, uint64_t *last) {
  bus_reader *r = NULL;
  size_t n = 0;
  uint64_t prev = 0;
  *first = *last = 0;
  int rc = bus_reader_open(f->c, o, &r);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  for (int guard = 0; guard < 1000; guard++) {
    rc = bus_reader_next(r, f->b, 1000);
    for (size_t i = 0; i < bus_batch_len(f->b); i++) {
      uint64_t seq;
      bus_batch_meta(f->b, i, NULL, &seq, NULL);
      cr_assert_gt(seq, prev, "out of order");
      cr_assert_not_null(bus_batch_event(f->b, i));
      if (!*first)
        *first = seq;
      prev = *last = seq;
      n++;
    }
    if (rc == BUS_EEOF)
      break;
    cr_assert_eq(rc, 0, "%s %s", bus_err_name(rc), bus_last_error());
  }
  cr_assert_eq(rc, BUS_EEOF);
  cr_assert_eq(bus_reader_next(r, f->b, 100), BUS_EEOF);
  bus_reader_close(r);
  return n;
}

Test(reader, bounds) {
  lt_fixture f;
  bus_reader_opts o;
  uint64_t first, last;
  lt_fixture_up(&f);
  put_n(&f, "lark.ev.sample.a", 3000);
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.batch = 512;
  cr_assert_eq(read_all(&f, &o, &first, &last), 3000);
  cr_assert_eq(first, 1);
  cr_assert_eq(last, 3000);
  o.from_seq = 1001;
  o.until_seq = 2000;
  cr_assert_eq(read_all(&f, &o, &first, &last), 1000);
  cr_assert_eq(first, 1001);
  cr_assert_eq(last, 2000);
  o.from_seq = 2999;
  o.until_seq = 99999; /* beyond the end: the stream's last seq bounds */
  cr_assert_eq(read_all(&f, &o, &first, &last), 2);
  o.from_seq = 4000; /* past the end: empty */
  o.until_seq = 0;
  cr_assert_eq(read_all(&f, &o, &first, &last), 0);
  lt_fixture_down(&f);
}

Test(reader, bound_fixed_at_open_and_filter) {
  lt_fixture f;
  bus_reader_opts o;
  bus_reader *r = NULL;
  uint64_t first, last;
  lt_fixture_up(&f);
  put_n(&f, "lark.ev.sample.a", 10);
  put_n(&f, "lark.ev.sample.b", 5);
  put_n(&f, "lark.ev.sample.a", 10);
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = "lark.ev.sample.b";
  cr_assert_eq(read_all(&f, &o, &first, &last), 5);
  cr_assert_eq(first, 11);
  cr_assert_eq(last, 15);
  o.filter = NULL;
  cr_assert_eq(bus_reader_open(f.c, &o, &r), 0);
  cr_assert_eq(bus_reader_end_seq(r), 25);
  put_n(&f, "lark.ev.sample.a", 10); /* after open: not read */
  size_t n = 0;
  int rc;
  while ((rc = bus_reader_next(r, f.b, 1000)) == 0)
    n += bus_batch_len(f.b);
  n += bus_batch_len(f.b);
  cr_assert_eq(rc, BUS_EEOF);
  cr_assert_eq(n, 25);
  bus_reader_close(r);
  lt_fixture_down(&f);
}

/*
 * The middle is put 20-60 ms into a second on purpose: a start time whose
 * fraction is under a tenth of a second is the case nats.c 3.4.1 encodes
 * wrongly (without leading zeros), which the reader must not inherit. The
 * five events put just before it, in the same tenth of a second, are the
 * ones a consumer started at the rounded-down time delivers first and the
 * reader must drop.
 */
Test(reader, until_ns_and_since_ns) {
  lt_fixture f;
  bus_reader_opts o;
  uint64_t first, last;
  lt_fixture_up(&f);
  put_n(&f, "lark.ev.sample.a", 20);
  lt_sleep_ms(10);
  lt_sleep_ms((int)((1000000000 - bus_wall_ns() % 1000000000) / 1000000) + 10);
  put_n(&f, "lark.ev.sample.a", 5);
  lt_sleep_ms(10);
  int64_t mid = bus_wall_ns();
  if (mid % 1000000000 >= 100000000)
    cr_log_warn("slow machine: mid is %lld ms into its second",
                (long long)(mid % 1000000000 / 1000000));
  lt_sleep_ms(20);
  put_n(&f, "lark.ev.sample.a", 25);
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.until_ns = mid;
  cr_assert_eq(read_all(&f, &o, &first, &last), 25);
  cr_assert_eq(last, 25);
  o.until_ns = 0;
  o.since_ns = mid;
  cr_assert_eq(read_all(&f, &o, &first, &last), 25);
  cr_assert_eq(first, 26);
  cr_assert_eq(last, 50);
  lt_fixture_down(&f);
}

Test(reader, follow) {
  lt_fixture f;
  bus_reader_opts o;
  bus_reader *r = NULL;
  lt_fixture_up(&f);
  put_n(&f, "lark.run.j", 5);
  bus_reader_opts_init(&o);
  o.stream = "LARK_RUNS";
  o.follow = 1;
  cr_assert_eq(bus_reader_open(f.c, &o, &r), 0, "%s", bus_last_error());
  cr_assert_eq(bus_reader_end_seq(r), 0);
  size_t n = 0;
  for (int i = 0; i < 20 && n < 5; i++) {
    cr_assert_eq(bus_reader_next(r, f.b, 200), 0);
    n += bus_batch_len(f.b);
  }
  cr_assert_eq(n, 5);
  cr_assert_eq(bus_reader_next(r, f.b, 100), 0);
  cr_assert_eq(bus_batch_len(f.b), 0);
  put_n(&f, "lark.run.j", 3);
  for (int i = 0; i < 20 && n < 8; i++) {
    cr_assert_eq(bus_reader_next(r, f.b, 200), 0);
    n += bus_batch_len(f.b);
  }
  cr_assert_eq(n, 8);
  bus_reader_close(r);
  lt_fixture_down(&f);
}
