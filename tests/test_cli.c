
Test(cli, get_at_any_valid_time_answers_truly_and_refuses_the_rest) {
  uint64_t s = 0;
  append_sample("a", 0, "sample.created", &s);
  cr_assert(wait_for("\"id\":\"a\""), "%s", err);
  /* before the first event: the empty platform, not the live one */
  const char *before[] = {"1970-01-01T00:00:00Z", "1970-01-01", "0",
                          "1969-12-31T23:59:59Z", "0001-01-01T00:00:00Z"};
  for (size_t i = 0; i < sizeof before / sizeof *before; i++) {
    cr_assert_eq(ctl("get", "samples", "--at", before[i], "-o", "json"), 0,
                 "%s: %s", before[i], err);
    cr_expect(!strstr(out, "\"id\":\"a\""), "%s: %s", before[i], out);
  }
  /* after the last event, even past 2262: the latest state */
  const char *after[] = {"2262-04-12T00:00:00Z", "2300-01-01T00:00:00Z",
                         "9999-12-31T23:59:59.999+14:00"};
  for (size_t i = 0; i < sizeof after / sizeof *after; i++) {
    cr_assert_eq(ctl("get", "samples", "--at", after[i], "-o", "json"), 0,
                 "%s: %s", after[i], err);
    cr_expect(strstr(out, "\"id\":\"a\""), "%s: %s", after[i], out);
  }
  /* not times: usage errors that say so */
  const char *bad[] = {"2026-02-30",
                       "2026-02-30T00:00:00Z",
                       "2023-02-29",
                       "2026-13-01",
                       "2026-01-01T24:00:00Z",
                       "2026-01-01T10:00:00+5:30",
                       "yesterday",
                       "-5m",
                       "nan",
                       "2026-01-01T10:00:00Zjunk"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(ctl("get", "samples", "--at", bad[i], NULL, NULL), 2,
                 "%s accepted", bad[i]);
    cr_expect(strstr(err, "not a time"), "%s: %s", bad[i], err);
  }
}

Test(cli, tail_refuses_what_is_not_a_sequence) {
  uint64_t s = 0;
  append_sample("a", 0, "sample.created", &s);
  const char *bad[] = {"-5", "0", "abc", "5x", "", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(ctl("tail", "--from-seq", bad[i], NULL, NULL, NULL), 2,
                 "--from-seq '%s' accepted: %s", bad[i], out);
    cr_expect(strstr(err, "not a stream sequence"), "%s: %s", bad[i], err);
  }
  cr_expect_eq(ctl("tail", "--since", "2026-02-30", NULL, NULL, NULL), 2);
  cr_assert_eq(ctl("tail", "--from-seq", "1", "-o", "json", NULL), 0, "%s",
               err);
  cr_expect(strstr(out, "sample.created"), "out: %s", out);
}
