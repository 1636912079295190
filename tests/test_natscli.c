/*
 * test_natscli.c - the NATS CLI (`nats`) as a real peer of the platform.
 *
 * A broker started with the config larkctl renders (single.conf.in, the
 * generated nkey users), the platform's streams, a few events appended
 * through libbus; then the real `nats` binary, given the nkey seed file
 * larkctl wrote, lists and describes the streams and reads the event log,
 * and a plain user's seed file cannot remove a stream. `larkctl status`
 * names the broker's version, the one `nats-server --version` prints,
 * to the admin and to a user alike.
 * Skipped when `nats` is not on PATH.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy.h"
#include "events.h"
#include "natsd.h"
#include "proc.h"
#include "secure.h"

static char data[256], admin_creds[512], alice_creds[512], alice_inbox[128];
static lt_natsd srv;
static bus_conn *admin;
static char out[1 << 16], err[8192];

#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

static void
append(const char *subject) {
  char id[33];
  bus_event ev;
  lt_sample_event(&ev, id, "sample.created", NULL);
  cr_assert_eq(bus_append(admin, subject, &ev, BUS_APPEND_CHECK, NULL, NULL), 0,
               "%s", bus_last_error());
}

/* A user may only hear replies under _INBOX_<its public key>. */
static void
alice_inbox_prefix(void) {
  char line[256] = "", pub[BUS_NKEY_PUB_LEN + 1];
  FILE *f = fopen(alice_creds, "r");
  cr_assert_not_null(f);
  while (fgets(line, sizeof line, f) && strncmp(line, "SU", 2))
    ;
  fclose(f);
  line[strcspn(line, "\n")] = 0;
  cr_assert_eq(bus_nkey_public(line, pub), 0, "no seed in %s", alice_creds);
  snprintf(alice_inbox, sizeof alice_inbox, "_INBOX_%s", pub);
}

static void
setup(void) {
  if (sh("command -v nats") != 0)
    cr_skip_test("the NATS CLI (nats) is not on PATH");
  lt_tmpdir(data, sizeof data, "natscli");
  cr_assert_eq(lark_creds_ensure(data, "admin", LARK_ROLE_ADMIN, NULL, NULL), 0,
               "%s", lark_cfg_error());
  cr_assert_eq(lark_creds_ensure(data, "alice", LARK_ROLE_USER, NULL, NULL), 0,
               "%s", lark_cfg_error());
  lark_creds_path(data, "admin", admin_creds, sizeof admin_creds);
  lark_creds_path(data, "alice", alice_creds, sizeof alice_creds);
  alice_inbox_prefix();
  cr_assert_eq(lt_secure_natsd_start(&srv, data), 0, "%s", lark_cfg_error());
  cr_assert_eq(lt_connect_as(srv.url, data, "admin", 2000, &admin), 0, "%s",
               bus_last_error());
  cr_assert_eq(lt_streams(admin, 2000), 0, "%s", bus_last_error());
  append("lark.ev.sample.a");
  append("lark.ev.sample.b");
  append("lark.ev.sample.c");
}

static void
teardown(void) {
  bus_conn_close(admin);
  if (srv.pid > 0)
    lt_natsd_stop(&srv);
  lt_rmtree(data);
}

TestSuite(natscli, .init = setup, .fini = teardown, .timeout = 120);

/* `nats` as creds' owner: --no-context so no operator's saved context
 * leaks in. */
#define NATS "nats --no-context --timeout 5s --server %s --nkey %s "

Test(natscli, seed_file_is_what_nats_takes) {
  cr_assert_eq(sh("head -c 40 %s", admin_creds), 0);
  cr_assert(strstr(out, "-----BEGIN USER NKEY SEED-----\nSU"), "%s", out);
  cr_assert_eq(sh(NATS "account info", srv.url, admin_creds), 0, "%s%s", out,
               err);
}

Test(natscli, admin_lists_and_describes_streams) {
  cr_assert_eq(sh(NATS "stream ls --names", srv.url, admin_creds), 0, "%s%s",
               out, err);
  for (size_t i = 0; bus_stream_names[i]; i++)
    cr_assert(strstr(out, bus_stream_names[i]), "%s missing: %s",
              bus_stream_names[i], out);
  cr_assert_eq(sh(NATS "stream info LARK_EVENTS --json", srv.url, admin_creds),
               0, "%s%s", out, err);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert_not_null(j, "not JSON: %s", out);
  json_t *cfg = json_object_get(j, "config");
  cr_assert_str_eq(json_string_value(json_object_get(cfg, "storage")), "file");
  cr_assert_eq(json_integer_value(
                   json_object_get(json_object_get(j, "state"), "messages")),
               3);
  json_decref(j);
}

Test(natscli, admin_reads_the_event_log) {
  cr_assert_eq(sh(NATS "stream get LARK_EVENTS --last-for lark.ev.sample.b "
                       "--json",
                  srv.url, admin_creds),
               0, "%s%s", out, err);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert_not_null(j, "not JSON: %s", out);
  cr_assert_str_eq(json_string_value(json_object_get(j, "subject")),
                   "lark.ev.sample.b");
  cr_assert_eq(json_integer_value(json_object_get(j, "seq")), 2);
  json_decref(j);
  /* the whole log through a consumer of the CLI's own */
  cr_assert_eq(sh(NATS "sub --stream LARK_EVENTS --all --count 3 "
                       "--headers-only 'lark.ev.>'",
                  srv.url, admin_creds),
               0, "%s%s", out, err);
  const char *all = out;
  for (const char *s = "abc"; *s; s++) {
    char subj[32];
    snprintf(subj, sizeof subj, "lark.ev.sample.%c", *s);
    cr_assert(strstr(all, subj), "%s missing: %s", subj, all);
  }
  cr_assert(strstr(all, "Lark-Type: sample.created"), "%s", all);
}

/* alice's own inbox, so that what she may do works and a refusal is
 * the broker's permission, not a reply she could not hear */
#define ALICE NATS "--inbox-prefix %s "

Test(natscli, user_reads_but_cannot_remove_a_stream) {
  cr_assert_eq(sh(ALICE "stream info LARK_EVENTS --json", srv.url, alice_creds,
                  alice_inbox),
               0, "a user reads a stream's info: %s%s", out, err);
  cr_assert(strstr(out, "\"messages\": 3"), "%s", out);
  cr_assert_eq(
      sh(ALICE "stream rm LARK_EVENTS -f", srv.url, alice_creds, alice_inbox),
      1, "a user removed LARK_EVENTS: %s%s", out, err);
  cr_assert(strstr(out, "Permissions Violation for Publish to "
                        "\"$JS.API.STREAM.DELETE.LARK_EVENTS\"") ||
                strstr(err, "Permissions Violation for Publish to "
                            "\"$JS.API.STREAM.DELETE.LARK_EVENTS\""),
            "refused by the broker's permissions: %s%s", out, err);
  uint64_t seq = 0;
  cr_assert_eq(bus_stream_last_seq(admin, "LARK_EVENTS", &seq), 0, "%s",
               bus_last_error());
  cr_assert_eq(seq, 3, "LARK_EVENTS is untouched");
  cr_assert_neq(sh(NATS "stream purge LARK_EVENTS -f", srv.url, alice_creds), 0,
                "a user purged LARK_EVENTS: %s%s", out, err);
  cr_assert_eq(bus_stream_last_seq(admin, "LARK_EVENTS", &seq), 0);
  cr_assert_eq(seq, 3);
}

Test(natscli, larkctl_status_names_the_broker_version) {
  char version[64] = "", larkctl[512];
  cr_assert_eq(sh("nats-server --version"), 0, "%s", err);
  /* "nats-server: v2.15.2" */
  char *v = strstr(out, ": v");
  cr_assert_not_null(v, "%s", out);
  snprintf(version, sizeof version, "%s", v + 3);
  version[strcspn(version, "\n")] = 0;
  lt_bin("larkctl", larkctl, sizeof larkctl);
  sh("LARK_URL=%s LARK_CREDS=%s %s status --wait 200ms -o json", srv.url,
     admin_creds, larkctl);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert_not_null(j, "not JSON: %s%s", out, err);
  json_t *s0 = json_array_get(
      json_object_get(json_object_get(j, "broker"), "servers"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(s0, "version")), version,
                   "%s", out);
  json_decref(j);
  sh("LARK_URL=%s LARK_CREDS=%s %s status --wait 200ms", srv.url, admin_creds,
     larkctl);
  char want[96];
  snprintf(want, sizeof want, "nats-server %s", version);
  cr_assert(strstr(out, want), "%s missing: %s", want, out);
  /* a user may not ask the system account: the INFO line says it */
  sh("LARK_URL=%s LARK_CREDS=%s %s status --wait 200ms", srv.url, alice_creds,
     larkctl);
  cr_assert(strstr(out, want), "as a user, %s missing: %s%s", want, out, err);
}
