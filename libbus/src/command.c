/*
 * command.c - the command path: lark.cmd.<user>.<kind>.<verb>.
 *
 * The user token comes from the subject, which the broker's permissions
 * pin to the connected user; nothing in the body can claim another actor.
 * Only lark-gateway may publish for another user; its reply inbox
 * (_INBOX_gateway) becomes the event's via.
 * Replies have one shape for every service, so larkctl prints every
 * refusal the same way (code, message, and each field's path and reason).
 */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "nats-int.h"

/* Copy the dot-separated token at *p into out; advance past the dot. */
static int
token(const char **p, char *out, size_t cap, int last) {
  const char *end = strchr(*p, '.');
  if (last && end)
    return BUS_EINVAL;
  if (!last && !end)
    return BUS_EINVAL;
  size_t n = end ? (size_t)(end - *p) : strlen(*p);
  if (n == 0 || n >= cap)
    return BUS_EINVAL;
  memcpy(out, *p, n);
  out[n] = 0;
  *p += n + (end ? 1 : 0);
  return 0;
}

/*
 * The via of a command: <p> of a reply subject _INBOX_<p>.<...> when p is
 * a name and not the user. Inboxes by key (_INBOX_<public key>: upper
 * case, never a name) and the plain _INBOX. prefix give none, so a user's
 * own commands carry no via and keep their events' bytes.
 */
static void
cmd_via(bus_cmd *cmd, const char *reply) {
  static const char pre[] = "_INBOX_";
  if (!reply || strncmp(reply, pre, sizeof pre - 1))
    return;
  const char *p = reply + sizeof pre - 1, *dot = strchr(p, '.');
  size_t n = dot ? (size_t)(dot - p) : 0;
  if (!n || n >= sizeof cmd->via)
    return;
  memcpy(cmd->via, p, n);
  cmd->via[n] = 0;
  if (!bus_name_valid(cmd->via, BUS_NAME_MAX) || !strcmp(cmd->via, cmd->user))
    cmd->via[0] = 0;
}

int
bus_cmd_parse(const char *subject, const char *reply, const void *data,
              size_t len, msgpack_zone *zone, bus_cmd *cmd) {
  memset(cmd, 0, sizeof *cmd);
  cmd->reply = reply;
  cmd->body.type = MSGPACK_OBJECT_MAP;
  const char *p = subject;
  if (strncmp(p, "lark.cmd.", 9))
    return BUS_ERR(BUS_EINVAL, "%s is not a command subject", subject);
  p += 9;
  if (token(&p, cmd->user, sizeof cmd->user, 0) ||
      token(&p, cmd->kind, sizeof cmd->kind, 0) ||
      token(&p, cmd->verb, sizeof cmd->verb, 1))
    return BUS_ERR(BUS_EINVAL, "%s: want lark.cmd.<user>.<kind>.<verb>",
                   subject);
  cmd_via(cmd, reply);
  if (len == 0)
    return 0; /* an empty body is an empty map */
  if (len > BUS_MAX_PAYLOAD)
    return BUS_ERR(BUS_ETOO_BIG, "command body of %zu bytes", len);
  void *copy = msgpack_zone_malloc(zone, len);
  if (!copy)
    return BUS_ERR(-ENOMEM, "out of memory copying a command body");
  memcpy(copy, data, len);
  size_t off = 0;
  if (msgpack_unpack(copy, len, &off, zone, &cmd->body) !=
          MSGPACK_UNPACK_SUCCESS ||
      off != len || cmd->body.type != MSGPACK_OBJECT_MAP)
    return BUS_ERR(BUS_EMALFORMED, "command body is not one msgpack map");
  bus_obj_str(&cmd->body, "key", cmd->key, sizeof cmd->key);
  return 0;
}

/* One field of the id: its length (4 bytes, little-endian), its bytes. */
static void
id_field(crypto_generichash_state *st, const char *s) {
  size_t n = strlen(s);
  unsigned char len[4] = {(unsigned char)n, (unsigned char)(n >> 8),
                          (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
  crypto_generichash_update(st, len, sizeof len);
  crypto_generichash_update(st, (const unsigned char *)s, n);
}

void
bus_cmd_event_id(const bus_cmd *cmd, char out[33]) {
  static const char tag[] = "larkbus command id v1";
  if (!cmd->key[0]) {
    bus_event_new_id(out); /* also starts libsodium */
    return;
  }
  unsigned char raw[16];
  crypto_generichash_state st;
  if (sodium_init() < 0) { /* cannot fail once started; never a fixed id */
    bus_event_new_id(out);
    return;
  }
  crypto_generichash_init(&st, NULL, 0, sizeof raw);
  crypto_generichash_update(&st, (const unsigned char *)tag, sizeof tag);
  id_field(&st, cmd->kind);
  id_field(&st, cmd->verb);
  id_field(&st, cmd->user);
  id_field(&st, cmd->key);
  crypto_generichash_final(&st, raw, sizeof raw);
  sodium_bin2hex(out, 33, raw, sizeof raw);
}

/*
 * The broker checks the version before it looks for a duplicate, so the
 * retry of a command that landed meets a conflict on its own event: the
 * subject's last message tells it (same id: the first attempt's).
 */
static int
landed(bus_conn *c, const char *subject, const char *id, uint64_t *seq) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  bus_event last;
  int same = bus_last_event(c, "LARK_EVENTS", subject, &last, &zone) == 0 &&
             last.id && !strcmp(last.id, id);
  if (same && seq)
    *seq = last.seq;
  msgpack_zone_destroy(&zone);
  return same;
}

/* The event a command appends (id into id). */
static bus_event
cmd_event(const bus_cmd *cmd, const char *type, uint64_t prev, const void *data,
          size_t len, char id[33]) {
  bus_cmd_event_id(cmd, id);
  bus_event ev = {.v = BUS_SCHEMA_VERSION,
                  .type = type,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = cmd->user,
                  .via = cmd->via,
                  .cause = cmd->key,
                  .prev = prev,
                  .data_mp = data ? data : "\x80",
                  .data_mp_len = data ? len : 1};
  return ev;
}

/*
 * rc of an append of a command's event (id): a conflict on the command's
 * own event, there from an earlier attempt, is that attempt's success,
 * its sequence into *seq and *dup = 1 (either may be NULL).
 */
static int
settle(bus_conn *c, const bus_cmd *cmd, const char *subject, const char *id,
       int rc, uint64_t *seq, int *dup) {
  char why[512];
  if (rc != BUS_ECONFLICT || !cmd->key[0])
    return rc;
  snprintf(why, sizeof why, "%s", bus_last_error());
  if (!landed(c, subject, id, seq))
    return BUS_ERR(rc, "%s", why);
  if (dup)
    *dup = 1;
  return 0;
}

int
bus_cmd_append(bus_conn *c, const bus_cmd *cmd, const char *subject,
               const char *type, uint64_t prev, const void *data, size_t len,
               uint64_t *seq, int *dup) {
  char id[33];
  bus_event ev = cmd_event(cmd, type, prev, data, len, id);
  int rc = bus_append(c, subject, &ev, BUS_APPEND_CHECK, seq, dup);
  return settle(c, cmd, subject, id, rc, seq, dup);
}

/*
 * The items' events, made as bus_cmd_append makes them, go out together
 * through bus_append_many, which appends again alone what was not sent,
 * not answered or refused otherwise than by the check. What is left is
 * settled as bus_cmd_append settles its own append: a conflict on the
 * command's own event is the first attempt's. Without memory for that,
 * each item is appended alone.
 */
int
bus_cmd_append_many(bus_conn *c, bus_cmd_item *items, size_t n) {
  bus_append_item *v = calloc(n + 1, sizeof *v);
  bus_event *ev = calloc(n + 1, sizeof *ev);
  char(*id)[33] = calloc(n + 1, sizeof *id);
  int many = v && ev && id;
  for (size_t i = 0; many && i < n; i++) {
    bus_cmd_item *it = &items[i];
    ev[i] = cmd_event(it->cmd, it->type, it->prev, it->data, it->len, id[i]);
    v[i] = (bus_append_item){
        .subject = it->subject, .ev = &ev[i], .flags = BUS_APPEND_CHECK};
  }
  if (many)
    bus_append_many(c, v, n);
  for (size_t i = 0; i < n; i++) {
    bus_cmd_item *it = &items[i];
    it->seq = many ? v[i].seq : 0;
    it->rc =
        many ? settle(c, it->cmd, it->subject, id[i], v[i].rc, &it->seq, NULL)
             : bus_cmd_append(c, it->cmd, it->subject, it->type, it->prev,
                              it->data, it->len, &it->seq, NULL);
  }
  free(v);
  free(ev);
  free(id);
  return 0;
}

int
bus_cmd_reply_ok(bus_conn *c, const bus_cmd *cmd, uint64_t seq,
                 const void *extra, size_t extra_len, uint32_t nextra) {
  if (!cmd->reply)
    return 0;
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2 + (extra ? nextra : 0));
  bus_pack_kv_bool(&b.pk, "ok", 1);
  bus_pack_kv_uint(&b.pk, "seq", seq);
  if (extra)
    bus_pack_raw(&b.pk, extra, extra_len);
  int rc = bus_conn_publish(c, cmd->reply, b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
  return rc;
}

int
bus_cmd_reply_error(bus_conn *c, const bus_cmd *cmd, int err,
                    const char *message, const bus_field_err *details,
                    int ndetails) {
  if (!cmd || !cmd->reply)
    return 0;
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_str(&b.pk, "error");
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "code", bus_err_name(err));
  bus_pack_kv_str(&b.pk, "message", message ? message : bus_strerror(err));
  bus_pack_str(&b.pk, "details");
  msgpack_pack_array(&b.pk, ndetails > 0 ? (uint32_t)ndetails : 0);
  for (int i = 0; i < ndetails; i++) {
    msgpack_pack_map(&b.pk, 2);
    bus_pack_kv_str(&b.pk, "path", details[i].path);
    bus_pack_kv_str(&b.pk, "reason", details[i].reason);
  }
  int rc = bus_conn_publish(c, cmd->reply, b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
  return rc;
}

typedef struct cmd_server {
  bus_cmd_cb cb;
  void *ud;
} cmd_server;

static void
on_request(bus_conn *c, const char *subject, const char *reply,
           const void *data, size_t len, void *ud) {
  cmd_server *s = ud;
  if (!bus__is_request(reply)) /* stream content pushed here: ignored */
    return;
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  bus_cmd cmd;
  int rc = bus_cmd_parse(subject, reply, data, len, &zone, &cmd);
  if (rc) {
    bus_cmd cmd_err = {.reply = reply};
    bus_cmd_reply_error(c, &cmd_err, rc, bus_last_error(), NULL, 0);
  } else {
    s->cb(c, &cmd, s->ud);
  }
  msgpack_zone_destroy(&zone);
}

int
bus_cmd_serve(bus_conn *c, const char *kind, bus_cmd_cb cb, void *ud,
              bus_serve **out) {
  char subject[BUS_SUBJECT_MAX], queue[BUS_NAME_MAX + 8];
  snprintf(subject, sizeof subject, "lark.cmd.*.%s.*", kind);
  snprintf(queue, sizeof queue, "lark-%s", kind);
  /* the server lives as long as the subscription; freed with it */
  cmd_server *s = calloc(1, sizeof *s);
  if (!s)
    return BUS_ERR(-ENOMEM, "out of memory serving %s", subject);
  s->cb = cb;
  s->ud = ud;
  int rc = bus__conn_serve_owned(c, subject, queue, on_request, s, free, out);
  if (rc)
    free(s);
  return rc;
}
