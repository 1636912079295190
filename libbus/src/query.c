/*
 * query.c - answering reads of a view with one reply shape.
 *
 * The result is packed into a scratch buffer first, so a query that fails
 * halfway leaves no partial value in the reply: either {ok, result} whole,
 * or {error}.
 */
#include <errno.h>
#include <string.h>

#include "bus-int.h"

static void
pack_error(msgpack_packer *pk, int err, const char *message) {
  msgpack_pack_map(pk, 1);
  bus_pack_str(pk, "error");
  msgpack_pack_map(pk, 3);
  bus_pack_str(pk, "code");
  bus_pack_str(pk, bus_err_name(err));
  bus_pack_str(pk, "message");
  bus_pack_str(pk, message && *message ? message : bus_strerror(err));
  bus_pack_str(pk, "details");
  msgpack_pack_array(pk, 0);
}

void
bus_query_answer(bus_view *v, bus_query_fn q, const char *kind,
                 const char *verb, const msgpack_object *req,
                 msgpack_sbuffer *out, void *ud) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
  msgpack_sbuffer scratch;
  msgpack_sbuffer_init(&scratch);
  msgpack_packer spk;
  msgpack_packer_init(&spk, &scratch, msgpack_sbuffer_write);
  msgpack_object empty = {.type = MSGPACK_OBJECT_MAP};
  bus_txn *t = NULL;
  bus__clear_error();
  int rc = bus_view_read(v, &t);
  if (rc == 0)
    rc = q(t, kind, verb, req ? req : &empty, &spk, ud);
  bus_txn_end(t);
  if (rc == 0) {
    msgpack_pack_map(&pk, 2);
    bus_pack_str(&pk, "ok");
    msgpack_pack_true(&pk);
    bus_pack_str(&pk, "result");
    msgpack_sbuffer_write(out, scratch.data, scratch.size);
  } else {
    pack_error(&pk, rc, bus_last_error());
  }
  msgpack_sbuffer_destroy(&scratch);
}

typedef struct lister {
  bus_list_cb each;
  void *ud;
  size_t limit, n;
  bus_packbuf items; /* counted before the array's header is written */
} lister;

static int
list_one(const void *key, size_t klen, const void *val, size_t vlen, void *ud) {
  lister *l = ud;
  int rc = l->each(key, klen, val, vlen, &l->items.pk, l->ud);
  if (rc < 0)
    return rc;
  l->n += rc > 0;
  return l->limit && l->n == l->limit ? 1 : 0;
}

int
bus_txn_list(bus_txn *t, const char *table, const void *prefix, size_t plen,
             size_t limit, bus_list_cb each, void *ud, msgpack_packer *out) {
  lister l = {.each = each, .ud = ud, .limit = limit};
  bus_packbuf_init(&l.items);
  int rc = bus_txn_scan(t, table, prefix, plen, list_one, &l);
  if (rc >= 0) {
    rc = msgpack_pack_array(out, (uint32_t)l.n) ? -ENOMEM : 0;
    if (!rc && l.items.sb.size)
      rc = out->callback(out->data, l.items.sb.data, l.items.sb.size) ? -ENOMEM
                                                                      : 0;
  }
  bus_packbuf_destroy(&l.items);
  return rc;
}
