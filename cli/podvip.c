/*
 * podvip.c - the virtual IP of each pod, for `get pods -o wide`.
 *
 * The scheduler knows a pod's local address (what its node reported);
 * the address its peers use is lark-ipam's: the allocation the Domain
 * holds for it. The Domains are listed, each described, and every pod of
 * the list that holds an address gets it as "virtualIP". With --at the
 * ipam view is read as it was then, like the scheduler's. When lark-ipam
 * does not answer, the column stays empty: the pods still print.
 */
#include <stdio.h>
#include <string.h>

#include "kinds.h"

/* item with one more string pair k: v, its pairs copied into zone. */
static void
add_str(msgpack_object *item, const char *k, const msgpack_object *v,
        msgpack_zone *zone) {
  uint32_t n = item->via.map.size;
  msgpack_object_kv *kv = msgpack_zone_malloc(zone, (n + 1) * sizeof *kv);
  if (!kv)
    return;
  memcpy(kv, item->via.map.ptr, n * sizeof *kv);
  kv[n].key.type = MSGPACK_OBJECT_STR;
  kv[n].key.via.str.ptr = k;
  kv[n].key.via.str.size = (uint32_t)strlen(k);
  kv[n].val = *v;
  item->via.map.ptr = kv;
  item->via.map.size = n + 1;
}

/* Give each pod of items its address among allocs ([{pod, ip, ...}]). */
static void
join(msgpack_object *items, const msgpack_object *allocs, msgpack_zone *zone) {
  for (uint32_t a = 0; allocs && allocs->type == MSGPACK_OBJECT_ARRAY &&
                       a < allocs->via.array.size;
       a++) {
    const msgpack_object *al = &allocs->via.array.ptr[a];
    const msgpack_object *pod = bus_obj_get(al, "pod");
    const msgpack_object *ip = bus_obj_get(al, "ip");
    for (uint32_t i = 0; pod && ip && i < items->via.array.size; i++) {
      msgpack_object *it = &items->via.array.ptr[i];
      const msgpack_object *name = bus_obj_get(it, "name");
      if (it->type == MSGPACK_OBJECT_MAP && name &&
          msgpack_object_equal(*name, *pod) && !bus_obj_get(it, "virtualIP"))
        add_str(it, "virtualIP", ip, zone);
    }
  }
}

static void
pack_name(msgpack_sbuffer *sb, const char *name) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "name", 4);
  msgpack_pack_str_with_body(&pk, name, strlen(name));
}

void
cli_pod_vips(lark_cli *cli, int64_t at, msgpack_object *items,
             msgpack_zone *zone) {
  msgpack_object doms;
  if (items->type != MSGPACK_OBJECT_ARRAY || !items->via.array.size)
    return;
  msgpack_sbuffer all;
  msgpack_sbuffer_init(&all);
  pack_name(&all, "");
  cli_quiet(1);
  if (cli_query(cli, "ipam", "domain", "list", &all, at, zone, &doms) != CLI_OK)
    doms.type = MSGPACK_OBJECT_NIL;
  msgpack_sbuffer_destroy(&all);
  for (uint32_t d = 0;
       doms.type == MSGPACK_OBJECT_ARRAY && d < doms.via.array.size; d++) {
    char name[BUS_NAME_MAX + 1];
    msgpack_object desc;
    if (!bus_obj_str(&doms.via.array.ptr[d], "name", name, sizeof name))
      continue;
    msgpack_sbuffer req;
    msgpack_sbuffer_init(&req);
    pack_name(&req, name);
    if (cli_query(cli, "ipam", "domain", "describe", &req, at, zone, &desc) ==
        CLI_OK)
      join(items, bus_obj_get(&desc, "allocations"), zone);
    msgpack_sbuffer_destroy(&req);
  }
  cli_quiet(0);
}
