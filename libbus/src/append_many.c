/*
 * append_many.c - several appends in flight, each settled as bus_append
 * would settle it alone (bus.h).
 *
 * The appends go out through a pipe (pipe.c) one after another without
 * waiting, and their answers are read in the order sent: a broker that
 * answers each after a queue of other clients' requests costs one such
 * wait for all of them, not one each. An item the pipe could not send,
 * or whose answer did not come or was not a plain store or check
 * failure, is appended again on its own with bus_append (same id: one
 * that did land is a duplicate), so its answer is exactly bus_append's.
 */
#include <stdlib.h>
#include <string.h>

#include "nats-int.h"
#include "pipe.h"

/* Item it sent on p: its slot; -1 when it is not valid to send (bus_append
 * says why), -2 when it could not be sent. */
static int
send_item(bus__pipe *p, const bus_append_item *it, msgpack_sbuffer *sb) {
  const bus_event *ev = it->ev;
  const char *type = !ev ? NULL : ev->type ? ev->type : bus_type_name(ev->t);
  msgpack_sbuffer_clear(sb);
  if (!it->subject || !*it->subject || !ev || !ev->id || !*ev->id || !type ||
      bus_event_encode(ev, sb) < 0)
    return -1;
  int at = bus__pipe_send(p, it->subject, ev->id, type, sb->data, sb->size,
                          it->flags, ev->prev);
  return at < 0 ? -2 : at;
}

int
bus_append_many(bus_conn *c, bus_append_item *items, size_t n) {
  bus__pipe *p = NULL;
  msgpack_sbuffer sb;
  int *slot = n > 1 ? malloc(n * sizeof *slot) : NULL;
  msgpack_sbuffer_init(&sb);
  for (size_t i = 0; slot && i < n; i++)
    slot[i] = -2;
  if (slot && bus__pipe_open(c, &p) == 0) {
    bus__pipe_round(p);
    for (size_t i = 0; i < n && (i == 0 || slot[i - 1] != -2); i++)
      slot[i] = send_item(p, &items[i], &sb);
  }
  for (size_t i = 0; i < n; i++) {
    bus__ack a = {0};
    bus_append_item *it = &items[i];
    int rc = slot && slot[i] >= 0 ? bus__pipe_ack(p, slot[i], &a) : BUS_EINVAL;
    if (rc == 0 || rc == BUS_ECONFLICT) {
      it->rc = rc, it->seq = a.seq, it->dup = a.dup;
      continue;
    }
    it->seq = 0, it->dup = 0;
    it->rc = bus_append(c, it->subject, it->ev, it->flags, &it->seq, &it->dup);
  }
  bus__pipe_close(p);
  free(slot);
  msgpack_sbuffer_destroy(&sb);
  return 0;
}
