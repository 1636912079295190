/*
 * streams.c - `larkctl init`'s work: create or update the platform's
 * streams (bus_streams_ensure) and tell, for each, whether it was created,
 * updated or left as it was, by comparing its configuration through
 * $JS.API.STREAM.INFO before and after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "deploy-int.h"

int
lark_stream_info(bus_conn *c, const char *name, unsigned long long *messages,
                 int *replicas, char **config_json, unsigned long long *bytes) {
  char subj[160];
  void *reply = NULL;
  size_t len = 0;
  json_t *j = NULL;
  snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
  int rc = bus_conn_request(c, subj, "", 0, 5000, &reply, &len);
  if (rc < 0)
    return dpl_fail(rc, "stream info %s: %s", name, bus_last_error());
  json_error_t jerr;
  j = json_loadb(reply, len, 0, &jerr);
  json_t *err = j ? json_object_get(j, "error") : NULL;
  json_t *cfg = j ? json_object_get(j, "config") : NULL;
  if (err) {
    json_int_t code = json_integer_value(json_object_get(err, "code"));
    rc = dpl_fail(code == 404 ? BUS_ENOT_FOUND : BUS_EBROKER, "%s: %s", name,
                  json_string_value(json_object_get(err, "description")));
    goto out;
  }
  if (!cfg) {
    rc = dpl_fail(BUS_EMALFORMED, "stream info %s: unexpected reply", name);
    goto out;
  }
  json_t *state = json_object_get(j, "state");
  if (messages)
    *messages = (unsigned long long)json_integer_value(
        json_object_get(state, "messages"));
  if (bytes)
    *bytes =
        (unsigned long long)json_integer_value(json_object_get(state, "bytes"));
  if (replicas)
    *replicas = (int)json_integer_value(json_object_get(cfg, "num_replicas"));
  if (config_json)
    *config_json = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
out:
  json_decref(j);
  free(reply);
  return rc;
}

int
lark_streams_init(bus_conn *c, const bus_streams_opts *o,
                  lark_stream_report *reports, size_t cap, size_t *n) {
  char *before[16] = {0};
  size_t count = 0;
  int rc = 0;
  for (; bus_stream_names[count] && count < cap && count < 16; count++) {
    rc = lark_stream_info(c, bus_stream_names[count], NULL, NULL,
                          &before[count], NULL);
    if (rc < 0 && rc != BUS_ENOT_FOUND)
      goto out;
  }
  rc = bus_streams_ensure(c, o);
  if (rc < 0) {
    dpl_fail(rc, "%s", bus_last_error());
    goto out;
  }
  for (size_t i = 0; i < count; i++) {
    char *after = NULL;
    lark_stream_report *r = &reports[i];
    memset(r, 0, sizeof *r);
    r->name = bus_stream_names[i];
    rc = lark_stream_info(c, r->name, &r->messages, &r->replicas, &after, NULL);
    if (rc < 0)
      goto out;
    r->outcome = !before[i]                 ? LARK_STREAM_CREATED
                 : strcmp(before[i], after) ? LARK_STREAM_UPDATED
                                            : LARK_STREAM_UNCHANGED;
    free(after);
  }
  *n = count;
out:
  for (size_t i = 0; i < count; i++)
    free(before[i]);
  return rc;
}
