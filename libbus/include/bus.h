/*
 * bus.h - the larkbus library: what every part of the platform links.
 *
 * larkbus keeps every change to a resource as an event appended to a
 * JetStream stream. Services project those events into LMDB views and
 * publish their decisions as new events through an outbox. This header is
 * the whole public interface of libbus:
 *
 *   errors      negative ints; -errno for system failures, BUS_E* for ours
 *   typed data  the C types generated for every event type (bus_types.h)
 *   event       the envelope {v, type, id, ts, actor, cause, prev, data,
 *               via?}
 *   schema      validation of events and resources against schema/
 *   typed events  decode once into those types; apply from a table
 *   clock       monotonic and wall-clock time, sleeps, deadlines
 *   file        a file written whole: readers see the old one or the new
 *   pack        msgpack pack helpers: strings and map entries
 *   arrays      room for one more item in an array that doubles; where a
 *               key is in a sorted one
 *   cidr        IPv4 and IPv6 prefixes: parse, format, contain, count
 *   conn        a broker connection (nkey credentials, reconnect forever)
 *   streams     the platform's streams, defined once (docs/design.md section 2)
 *   append      one event, with the broker's version check, sync or async
 *   consumer    durable pull consumers and ordered replay
 *   view        LMDB views: apply many events per transaction, with the
 *               applied sequence and `prev` check in the same transaction
 *   outbox      decisions written with the view, published after commit
 *   digest      SHA-256 over a view's tables in key order
 *   service     the loop that ties them: fetch, apply, decide, ack, publish
 *
 * It is one file over 600 lines because it is libbus's only public header,
 * written as the library's manual, as lmdb.h is: every type, call and
 * convention a caller needs is read in one place, in this order.
 *
 * Conventions
 *
 * - Every function that can fail returns 0 or a negative error code. Detail
 *   (which field, which subject, the broker's text) is in a per-thread
 *   buffer read with bus_last_error(); it stays valid until the next failing
 *   call on the same thread. That buffer is the one channel for detail: no
 *   function writes a reason into a buffer of the caller's. Work libbus does
 *   in threads of its own has no caller to return to; it reports through
 *   callbacks of the caller's: bus_worker_opts.log gets a line carrying
 *   bus_last_error()'s text of the failure it met, bus_service_opts.on_state
 *   why the service's state changed.
 * - Out of memory is -ENOMEM, always, with what was being done in
 *   bus_last_error() ("out of memory opening view jobs").
 * - Destroy and close functions accept NULL.
 * - Option structs have an _init() that fills defaults; options are copied
 *   on open, so the caller's struct may go away afterwards.
 * - Threads: a bus_conn may be shared by threads (nats.c is thread safe). A
 *   bus_view, bus_consumer, bus_batch or bus_txn belongs to one thread at a
 *   time. LMDB read transactions may run in any thread concurrently with
 *   the single writer.
 * - Flags one thread sets and another reads (a stop flag) are C11 atomics
 *   (atomic_int). A lock-free atomic may be set by a signal handler too,
 *   so a process's SIGTERM handler and its other threads share one flag;
 *   volatile sig_atomic_t remains right for a flag only a signal handler
 *   sets and only the interrupted thread reads.
 * - libbus never logs and never exits: it writes nothing to stdout, stderr
 *   or syslog. What a thread of its own has to say goes to a callback of
 *   the caller's (bus_worker_opts.log), which may print it or drop it.
 */
#ifndef LARK_BUS_H
#define LARK_BUS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <msgpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/*
 * Our own codes live in one block below -4000, far from -errno. Each has a
 * name (bus_err_name: "CONFLICT", also the `code` of a command's error
 * reply) and a message (bus_strerror).
 */
#define BUS_ERRNO_MAP(XX)                                                      \
  XX(INVAL, "invalid argument")                                                \
  XX(MALFORMED, "malformed message")                                           \
  XX(UNKNOWN_TYPE, "unknown event type")                                       \
  XX(MISSING, "required field missing")                                        \
  XX(FIELD, "field has the wrong type or is out of bounds")                    \
  XX(TOO_BIG, "payload too large")                                             \
  XX(NAME, "invalid name")                                                     \
  XX(VERSION, "unsupported schema version")                                    \
  XX(CONFLICT, "version conflict: the subject has moved on")                   \
  XX(TIMEOUT, "timed out")                                                     \
  XX(NOT_FOUND, "not found")                                                   \
  XX(NO_STREAM, "stream missing")                                              \
  XX(DENIED, "permission denied")                                              \
  XX(BROKER, "broker error")                                                   \
  XX(CONN, "not connected")                                                    \
  XX(STORE, "view store error")                                                \
  XX(STALE, "stale prev: event ignored")                                       \
  XX(EXISTS, "already exists")                                                 \
  XX(CORRUPT, "view is corrupt or belongs to another view")                    \
  XX(AUTH, "credentials missing or invalid")                                   \
  XX(EOF, "end of the requested range")                                        \
  XX(BUSY, "others kept moving the subject on: try again later")

enum {
#define BUS__ERR_IDX(name, msg) BUS__EIDX_##name,
  BUS_ERRNO_MAP(BUS__ERR_IDX)
#undef BUS__ERR_IDX
      BUS__ERR_COUNT
};
#define BUS__ERR_BASE (-4001)
enum {
#define BUS__ERR_DEF(name, msg) BUS_E##name = BUS__ERR_BASE - BUS__EIDX_##name,
  BUS_ERRNO_MAP(BUS__ERR_DEF)
#undef BUS__ERR_DEF
};

/* "CONFLICT", or for -errno its symbolic name ("ENOENT"); "UNKNOWN" else. */
const char *bus_err_name(int err);
/* A static message for err (ours or -errno). */
const char *bus_strerror(int err);
/* Detail of the last failure on this thread; "" when there is none. */
const char *bus_last_error(void);
/*
 * Record detail for bus_last_error() and return err, for code outside
 * libbus (a service's apply, decide or query):
 *   return bus_error(BUS_ENOT_FOUND, "no job %s", name);
 */
int bus_error(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* -------------------------------------------------------------- typed data */

/*
 * Every event type of schema/schema.yaml has C types, generated by
 * schemagen into the build tree (bus_types.h, included here; docs/design.md
 * section 4):
 *
 *   bus_type              BUS_T_JOB_PLACED, ...: one value per event type,
 *                         sorted by name, BUS_T_UNKNOWN (0) first and
 *                         BUS_T__COUNT last. Only in memory: the numbers
 *                         move when the schema gains a type, so nothing
 *                         stores them; the wire carries the type's name.
 *   bus_ev_job_placed     the type's data as a struct, one member per
 *                         field, named as in the schema. An optional field
 *                         has a flag has_<field> (1: present); a required
 *                         one has none. A struct of the schema is a
 *                         generated struct (bus_binding, bus_job_spec),
 *                         embedded by value; a resource event's data is
 *                         the resource (bus_ev_job_submitted is
 *                         bus_job_res: apiVersion, kind, metadata, spec).
 *   bus_job_placed_unpack validated unpack of a `data` object
 *   bus_job_placed_pack   validated pack into an sbuffer: map sizes are
 *                         counted from the has_ flags, never by hand
 *   bus_subj_job_placed   the subject, from the schema's `subject:`
 *   bus_as_job_placed     a decoded event's typed data, or NULL
 *   <ctype>_write         unvalidated pack of one struct into a packer,
 *                         for building a larger value piece by piece
 *
 * Field types: strings of every kind are bus_str, a pointer and a length,
 * NOT NUL-terminated; int is int64_t, uint uint64_t, bool bool, float
 * double; arrays are { v, n } lists (bus_str_list, bus_u64_list,
 * bus_binding_list, ...), maps of strings or counts are { v, n } lists of
 * key-value pairs in the order received (bus_str_map, bus_u64_map),
 * `values` is bus_values, and `any` is bus_raw (its msgpack bytes).
 *
 * Ownership. Unpacked data is zero-copy where that is cheap: every bus_str
 * points into the bytes the decoder was given (which bus_event_decode
 * copies into its zone), and lists and bus_raw bytes are allocated from
 * the same zone. So everything reachable from a typed struct lives exactly
 * as long as that zone: until msgpack_zone_clear or _destroy (for a
 * bus_batch, until it is cleared, refilled or freed). Nothing is freed
 * one by one. For packing, the caller owns everything the struct points
 * at; pack copies it into the sbuffer and keeps no pointer.
 */
typedef struct bus_str {
  const char *ptr; /* not NUL-terminated; may be NULL when len is 0 */
  uint32_t len;
} bus_str;

/* A bus_str of a string literal, or of a C string (NULL: empty). */
#define BUS_STR(lit) ((bus_str){(lit), (uint32_t)(sizeof(lit) - 1)})
bus_str bus_str_of(const char *s);
/* 1 when s holds exactly the C string c. */
int bus_str_eq(bus_str s, const char *c);
/* s with a NUL into buf, cut to cap - 1 bytes; returns buf. */
char *bus_str_copy(bus_str s, char *buf, size_t cap);

typedef struct bus_str_list {
  const bus_str *v;
  uint32_t n;
} bus_str_list;
typedef struct bus_u64_list {
  const uint64_t *v;
  uint32_t n;
} bus_u64_list;
typedef struct bus_i64_list {
  const int64_t *v;
  uint32_t n;
} bus_i64_list;
typedef struct bus_str_kv {
  bus_str key;
  bus_str val;
} bus_str_kv;
typedef struct bus_str_map {
  const bus_str_kv *v;
  uint32_t n;
} bus_str_map;
typedef struct bus_u64_kv {
  bus_str key;
  uint64_t val;
} bus_u64_kv;
typedef struct bus_u64_map {
  const bus_u64_kv *v;
  uint32_t n;
} bus_u64_map;

/* One entry of a `values` map: a scalar. A non-negative integer unpacks
 * as BUS_V_INT unless it exceeds INT64_MAX (then BUS_V_UINT). */
enum bus_value_kind {
  BUS_V_NIL,
  BUS_V_BOOL,
  BUS_V_INT,
  BUS_V_UINT,
  BUS_V_FLOAT,
  BUS_V_STR
};
typedef struct bus_value {
  bus_str key;
  int kind; /* enum bus_value_kind */
  union {
    int b;
    int64_t i;
    uint64_t u;
    double f;
    bus_str s;
  } as;
} bus_value;
typedef struct bus_values {
  const bus_value *v;
  uint32_t n;
} bus_values;

/* An `any` field: one msgpack value, as its bytes. */
typedef struct bus_raw {
  const void *mp;
  size_t len;
} bus_raw;

/*
 * A map no schema type describes (a command's body), counted as it is
 * written, so no size is counted by hand:
 *
 *   bus_map m;
 *   bus_map_begin(&m, &pk);
 *   bus_map_str(&m, "role", role);
 *   if (domain)
 *     bus_map_str(&m, "domain", domain);
 *   msgpack_pack_array(bus_map_key(&m, "gpus"), 2); ...  (any value)
 *   rc = bus_map_end(&m);   (writes the map into pk; -ENOMEM on failure)
 *
 * bus_map_key counts one entry and returns the packer its value goes to.
 * bus_map_end must be called once begun: it frees the entries' buffer.
 */
typedef struct bus_map {
  msgpack_packer *out;
  msgpack_sbuffer body;
  msgpack_packer pk;
  uint32_t n;
  int bad;
} bus_map;

void bus_map_begin(bus_map *m, msgpack_packer *out);
msgpack_packer *bus_map_key(bus_map *m, const char *key);
void bus_map_str(bus_map *m, const char *key, const char *val);
void bus_map_uint(bus_map *m, const char *key, uint64_t val);
int bus_map_end(bus_map *m);

struct bus_event;

#include "bus_types.h"

/* ------------------------------------------------------------------- event */

#define BUS_SCHEMA_VERSION 1
#define BUS_MAX_PAYLOAD (1024 * 1024) /* nats-server's default max_payload */
#define BUS_NAME_MAX 63               /* a name a user gives */
#define BUS_DERIVED_NAME_MAX 253      /* a name derived from others */
#define BUS_SUBJECT_MAX 512

/*
 * The event envelope (docs/design.md section 4). NATS headers carry Nats-Msg-Id
 * (= id) and Lark-Type (= type); the body is the msgpack map
 * {v, type, id, ts, actor, cause, prev, data} and, only when it is set,
 * via (so an event without one keeps the bytes it always had).
 *
 * Encoding reads: type, id, ts, actor, cause, prev, via, and the data
 * either as pre-packed msgpack bytes (data_mp, data_mp_len: one msgpack
 * map) or, when data_mp is NULL, as the msgpack_object `data` (type NIL
 * means {}), or, when that is NIL too and typed is set, as the generated
 * struct typed points at (see "typed events").
 *
 * Decoding fills every field. Strings are NUL-terminated copies and `data`
 * points into the msgpack_zone given to the decoder: they stay valid until
 * that zone is cleared or destroyed. data_mp is set to NULL on decode; t
 * to the type's enum; typed to NULL, or to the typed data when decoded
 * with bus_event_decode_typed.
 *
 * Delivery fields (subject, seq, stored_ns) are set for events that came
 * from a stream; they are not part of the body.
 *
 * A service reads an event's data through its generated struct
 * (bus_as_<type>, section "typed data") and writes it from one
 * (bus_<type>_pack); `data` as a msgpack_object is for what handles any
 * event alike (tail, replay, the digest, the outbox) and for a type this
 * build's schema does not know.
 */
typedef struct bus_event {
  uint32_t v;
  const char *type;  /* "job.submitted": <kind>.<verb> */
  const char *id;    /* unique; the broker's dedupe id */
  int64_t ts;        /* unix nanoseconds; a decided event takes its cause's */
  const char *actor; /* who: a user, a service, a node */
  const char *cause; /* the command or event id that led to it; may be "" */
  uint64_t prev;     /* version the writer saw; 0 for a create */
  const char *via;   /* the principal a command came through for its actor
                        (lark-gateway: "gateway"), a name; NULL or "" when
                        none (decoded as "") */
  msgpack_object data;
  const void *data_mp;
  size_t data_mp_len;
  bus_type t;        /* the type's enum; set on decode ("typed events") */
  const void *typed; /* its generated struct, or NULL */
  /* delivery */
  const char *subject;
  uint64_t seq;
  int64_t stored_ns;
} bus_event;

/*
 * Encode ev into out (appended to whatever out holds). Validates the
 * envelope and, for a type known to the schema, the data: returns
 * BUS_EUNKNOWN_TYPE, BUS_EMISSING, BUS_EFIELD, BUS_ENAME or BUS_ETOO_BIG
 * with the field path in bus_last_error(). out is left as it was on error.
 */
int bus_event_encode(const bus_event *ev, msgpack_sbuffer *out);

/*
 * Decode and validate one event from buf. Never crashes on hostile input:
 * returns BUS_EMALFORMED (not msgpack, trailing bytes, not a map, wrong
 * envelope types), BUS_EVERSION (v newer than BUS_SCHEMA_VERSION),
 * BUS_EUNKNOWN_TYPE, BUS_EMISSING, BUS_EFIELD, BUS_ENAME or BUS_ETOO_BIG
 * (len > BUS_MAX_PAYLOAD). Allocates from zone (see bus_event).
 * Delivery fields are left as they were.
 */
int bus_event_decode(const void *buf, size_t len, bus_event *ev,
                     msgpack_zone *zone);

/* The kind of an event type: "job" for "job.submitted". Writes at most
 * cap bytes with NUL; returns BUS_EINVAL if type has no '.'. */
int bus_event_kind(const char *type, char *kind, size_t cap);

/* A new random event id (32 hex chars + NUL) into out[33]. */
void bus_event_new_id(char out[33]);

/*
 * A deterministic id derived from a cause id and an index, for decided
 * events: the same decision made twice (after a crash, or in two
 * schedulers) gets the same id, so the broker drops the second.
 */
void bus_event_derive_id(const char *cause, unsigned index, char out[33]);

/* 1 if s is a valid name of at most max characters: [a-z0-9-], not
 * starting or ending with '-'. */
int bus_name_valid(const char *s, size_t max);

/* ------------------------------------------------------------------ schema */

/*
 * schema/ is the single source of truth for event types and resources;
 * libbus carries tables generated from it. A check reports every problem
 * it finds, up to max, as {path, reason}: the `details` of a command's
 * error reply.
 */
typedef struct bus_field_err {
  char path[128];   /* "data.tasks[0].replicas" */
  char reason[160]; /* "must be an integer from 1 to 1024" */
} bus_field_err;

/* 1 if type (an event type like "job.submitted") is in the schema. */
int bus_schema_has_type(const char *type);

/*
 * Check obj against the data schema of an event type, or of a resource
 * kind when name is a resource ("Job", "Workflow", ...). Fills errs[0..max)
 * and *n (the count found, which may exceed max). Returns 0 when valid,
 * else the code of the first problem (BUS_EMISSING, BUS_EFIELD, ...), or
 * BUS_EUNKNOWN_TYPE when name is in neither table.
 */
int bus_schema_check(const char *name, const msgpack_object *obj,
                     bus_field_err *errs, int max, int *n);

/* ------------------------------------------------------------ typed events */

/*
 * Events decoded once, at the door, into their generated types (see "typed
 * data" above).
 *
 * bus_event_decode sets ev->t and leaves ev->typed NULL. bus_event_decode_
 * typed does the same checks, then unpacks the data into its generated
 * struct, allocated in the same zone, and points ev->typed at it: the
 * data's bounds are checked once (by the schema tables, with today's
 * paths in bus_last_error()), and the struct needs no checks after. A
 * bus_batch decodes every message this way, so a view's apply and a
 * worker's handler find ev->typed set.
 *
 * Encoding a typed event: set ev->t and ev->typed (a pointer to the
 * type's struct), leave data_mp NULL and data NIL; ev->type may be NULL
 * (the name of ev->t is used). bus_event_encode packs the struct, counts
 * its maps from the has_ flags and checks the result against the schema
 * before anything is kept. data_mp, then a non-NIL data, win over typed.
 *
 *   bus_ev_pod_forgotten d = {.pod = bus_str_of(pod), .has_version = 1,
 *                             .version = version};
 *   bus_event ev = {.t = BUS_T_POD_FORGOTTEN, .typed = &d, .id = id, ...};
 *   bus_subj_pod_forgotten(subject, sizeof subject, node, pod);
 */
int bus_event_decode_typed(const void *buf, size_t len, bus_event *ev,
                           msgpack_zone *zone);
/*
 * The typed data of ev (decoded by either function): ev->typed when set,
 * else its data unpacked into zone. BUS_EUNKNOWN_TYPE when ev->t is not a
 * type; the schema's codes when ev->data does not pass.
 */
int bus_event_typed(const bus_event *ev, msgpack_zone *zone, const void **out);

/* "job.placed" for BUS_T_JOB_PLACED; NULL for BUS_T_UNKNOWN or out of
 * range. */
const char *bus_type_name(bus_type t);
/* The enum of an event type's name; BUS_T_UNKNOWN when there is none. */
bus_type bus_type_of(const char *name);
/* sizeof the type's struct (0 for BUS_T_UNKNOWN). */
size_t bus_type_size(bus_type t);

/*
 * The generic forms of <type>_unpack and <type>_pack. unpack checks data
 * against the schema (BUS_EFIELD, BUS_EMISSING, BUS_ENAME with the path,
 * "data.bindings[0].node: ...") and fills out (a struct of type t) from
 * zone. pack appends data's msgpack map to out and checks it the same way;
 * out is left as it was on error.
 */
int bus_data_unpack(bus_type t, const msgpack_object *data, msgpack_zone *zone,
                    void *out);
int bus_data_pack(bus_type t, const void *data, msgpack_sbuffer *out);

/*
 * apply from a table indexed by the event's type instead of a chain of
 * strcmp:
 *
 *   static int on_placed(bus_txn *t, const bus_event *ev, const void *data,
 *                        void *ud) {
 *     const bus_ev_job_placed *p = data;
 *     ...
 *   }
 *   static const bus_apply_table table = {
 *       .on = {[BUS_T_JOB_PLACED] = on_placed, [BUS_T_JOB_PHASE] = ...}};
 *   static int apply(bus_txn *t, const bus_event *ev, void *ud) {
 *     return bus_apply_dispatch(&table, t, ev, ud);
 *   }
 *
 * data is ev->typed, or, for an event decoded without its types, the data
 * unpacked into a zone that lives until the handler returns. A type
 * without a handler goes to other, or is passed over (0) when other is
 * NULL. Returns the handler's result.
 */
typedef struct bus_txn bus_txn;
typedef int (*bus_apply_fn)(bus_txn *t, const bus_event *ev, const void *data,
                            void *ud);
typedef struct bus_apply_table {
  bus_apply_fn on[BUS_T__COUNT];
  bus_apply_fn other;
} bus_apply_table;

int bus_apply_dispatch(const bus_apply_table *tab, bus_txn *t,
                       const bus_event *ev, void *ud);

/* ------------------------------------------------------- msgpack helpers */

/* Lookup in a msgpack map by string key; NULL if obj is not a map or the
 * key is absent. The result points into obj. */
const msgpack_object *bus_obj_get(const msgpack_object *obj, const char *key);
/* A string field copied with NUL into buf (truncated to cap-1); returns
 * buf, or NULL if absent or not a string. */
const char *bus_obj_str(const msgpack_object *obj, const char *key, char *buf,
                        size_t cap);
/* Integer field (positive or negative msgpack ints); def when absent. */
int64_t bus_obj_int(const msgpack_object *obj, const char *key, int64_t def);

/* ------------------------------------------------------------------- clock */

/*
 * The platform's one clock. Monotonic time measures timeouts and intervals
 * (it never jumps); wall-clock time is what events, logs and ages carry
 * (unix time, which may jump when the host's clock is set).
 *
 *   int64_t until = bus_mono_ms() + timeout_ms;
 *   while (!done() && bus_mono_ms() < until)
 *     bus_sleep_ms(50);
 */
/* Monotonic nanoseconds and milliseconds since an arbitrary start. */
int64_t bus_mono_ns(void);
int64_t bus_mono_ms(void);
/* Wall-clock unix nanoseconds (bus_event.ts). */
int64_t bus_wall_ns(void);
/* Sleep ms milliseconds, or less when a signal is handled meanwhile (a
 * loop that checks its stop flag after each sleep stops promptly); ms <= 0
 * returns at once. */
void bus_sleep_ms(int ms);
/*
 * The time ms milliseconds from now on clock clk, for a timed wait
 * (pthread_cond_timedwait takes CLOCK_REALTIME unless its condition
 * variable was made with pthread_condattr_setclock). ms < 0 counts as 0.
 */
struct timespec bus_deadline_ms(clockid_t clk, int ms);
/*
 * A duration as people write it: "500ms", "30s", "15m", "24h", "7d" (a
 * decimal number and a unit); a bare number counts bare_ns each (0: a unit
 * is required). 0 with *ns set, or -1 when s is none of these, negative
 * or beyond int64_t.
 */
int bus_duration_parse(const char *s, double bare_ns, int64_t *ns);

/* -------------------------------------------------------------------- file */

/*
 * Write path whole with mode (whatever the umask) through path.tmp (made
 * anew: never written through a link left there), fsync and rename, so a reader
 * (sshd reading a KRL, a restart reading a key) sees the old file or the new
 * one, never a part of either. 0, or -errno with the path in bus_last_error();
 * path.tmp is removed then.
 */
int bus_file_write(const char *path, const void *data, size_t len,
                   unsigned mode);

/* -------------------------------------------------------------------- pack */

/*
 * Pack helpers for the maps every part writes: a C string, and a map entry
 * whose key is a C string. Each returns 0, or -1 when the packer's write
 * failed (msgpack-c's own convention; an sbuffer fails only when out of
 * memory). Integers take msgpack's smallest form, as msgpack-c's packers
 * do. A NULL string packs nil.
 *
 *   msgpack_pack_map(&pk, 2);
 *   bus_pack_kv_str(&pk, "name", job->name);
 *   bus_pack_kv_uint(&pk, "generation", job->generation);
 */
int bus_pack_str(msgpack_packer *pk, const char *s);
int bus_pack_kv_str(msgpack_packer *pk, const char *k, const char *v);
int bus_pack_kv_int(msgpack_packer *pk, const char *k, int64_t v);
int bus_pack_kv_uint(msgpack_packer *pk, const char *k, uint64_t v);
/* true when v is non-zero, else false. */
int bus_pack_kv_bool(msgpack_packer *pk, const char *k, int v);
/* mp, len bytes of already packed msgpack (one value), written as they are. */
int bus_pack_raw(msgpack_packer *pk, const void *mp, size_t len);
int bus_pack_kv_raw(msgpack_packer *pk, const char *k, const void *mp,
                    size_t len);

/*
 * A growing buffer with its packer, for the body every reply, event and
 * request starts as. The packer points at sb: a bus_packbuf is not copied
 * or moved once initialised. Out of memory shows as a failed pack, as with
 * a bare sbuffer.
 *
 *   bus_packbuf b;
 *   bus_packbuf_init(&b);
 *   msgpack_pack_map(&b.pk, 1);
 *   bus_pack_kv_str(&b.pk, "name", name);
 *   ... b.sb.data, b.sb.size ...
 *   bus_packbuf_destroy(&b);
 */
/*
 * An unsigned 64-bit number as 8 big-endian bytes, and back: keys that
 * sort in LMDB as the numbers do (a sequence, then a name).
 */
void bus_put_be64(unsigned char *p, uint64_t v);
uint64_t bus_get_be64(const unsigned char *p);

typedef struct bus_packbuf {
  msgpack_sbuffer sb;
  msgpack_packer pk;
} bus_packbuf;
void bus_packbuf_init(bus_packbuf *b);
/* Frees the buffer (unless its data was taken: sb.data set to NULL). */
void bus_packbuf_destroy(bus_packbuf *b);

/* ------------------------------------------------------------------ arrays */

/*
 * Room for one more item in an array that grows by doubling: *arr holds n
 * items of size bytes in *cap allocated. When n has reached *cap, the
 * array is reallocated to twice *cap (to first, or 16 when first is 0,
 * from empty). arr is the address of the array's pointer:
 *
 *   if ((rc = bus_grow(&rows, nrows, &cap, sizeof *rows, 64)))
 *     return rc;
 *   rows[nrows++] = row;
 *
 * 0, or -ENOMEM with the array as it was.
 */
int bus_grow(void *arr, size_t n, size_t *cap, size_t size, size_t first);

/*
 * Where key is in a sorted array of n items of size bytes at base, cmp
 * saying whether key sorts before (< 0), at (0) or after (> 0) an item:
 * its index, *found 1; or the index it would be inserted at, *found 0.
 *
 *   static int by_name(const void *key, const void *item) {
 *     return strcmp(key, ((const row *)item)->name);
 *   }
 *   size_t i = bus_bsearch(name, rows, n, sizeof *rows, by_name, &found);
 */
size_t bus_bsearch(const void *key, const void *base, size_t n, size_t size,
                   int (*cmp)(const void *key, const void *item), int *found);

/* -------------------------------------------------------------------- cidr */

/*
 * An IPv4 or IPv6 prefix: "10.0.0.0/16", "fd00::/64". The text is an
 * address as inet_pton(3) reads it (IPv4 dotted quad without leading
 * zeros, IPv6 in any of its forms, no zone), '/', and a prefix length of 1
 * to 3 decimal digits (leading zeros allowed) no longer than the address
 * (32 or 128). Nothing else: no spaces, no sign, no zone, at most 63
 * characters. By default the address may have host bits set
 * ("10.1.2.3/24": an interface's address and its network) and is kept as
 * written; flags make the parse stricter or looser:
 *
 *   BUS_CIDR_NETWORK  host bits must be clear ("10.0.0.1/24" refused,
 *                     bus_last_error() naming the network meant)
 *   BUS_CIDR_BARE     a bare address is taken too, as a /32 or /128
 *   BUS_CIDR_IPV4     IPv4 only
 *   BUS_CIDR_IPV6     IPv6 only
 *
 * Limits a caller puts on the length (a Domain's widest prefix, a node's
 * pod range of /8 to /30) are the caller's checks on c.prefix.
 */
enum {
  BUS_CIDR_NETWORK = 1,
  BUS_CIDR_BARE = 2,
  BUS_CIDR_IPV4 = 4,
  BUS_CIDR_IPV6 = 8
};

/* Room for any prefix's text with its NUL (INET6_ADDRSTRLEN + "/128"). */
#define BUS_CIDR_TEXT_MAX 50

typedef struct bus_cidr {
  int family;       /* 4 or 6 */
  int prefix;       /* 0..32 or 0..128 */
  uint8_t addr[16]; /* big-endian; IPv4 in addr[0..3], the rest 0 */
} bus_cidr;

/*
 * Parse s into out. BUS_EINVAL when s is not a prefix under flags, with
 * the reason in bus_last_error() ("... has no prefix length", "... is not
 * an IPv4 or IPv6 address", "...: prefix length out of range", "... has
 * host bits set (the network is ...)").
 */
int bus_cidr_parse(const char *s, unsigned flags, bus_cidr *out);
/* Clear c's host bits, leaving its network; 1 when some were set. */
int bus_cidr_mask(bus_cidr *c);
/*
 * The canonical text of c ("10.0.0.0/16", "fd00::/64"; host bits as they
 * are) into out, or only its address ("10.0.0.0"). BUS_EINVAL when cap is
 * too small (BUS_CIDR_TEXT_MAX always does); out is then truncated.
 */
int bus_cidr_format(const bus_cidr *c, char *out, size_t cap);
int bus_cidr_format_addr(const bus_cidr *c, char *out, size_t cap);
/* 1 when every address of x is in net (same family, x no wider than net,
 * the same network bits); an address is a /32 or /128. */
int bus_cidr_contains(const bus_cidr *net, const bus_cidr *x);
/* How many addresses c covers, 2^(32 or 128 - prefix); UINT64_MAX when
 * that is 2^64 or more. */
uint64_t bus_cidr_hosts(const bus_cidr *c);
/*
 * Address n of c, counting from its network address (0), as a /32 or
 * /128 in out. BUS_EINVAL when n >= bus_cidr_hosts(c) (a prefix with 2^64
 * addresses or more takes any n).
 */
int bus_cidr_nth(const bus_cidr *c, uint64_t n, bus_cidr *out);

/* -------------------------------------------------------------------- conn */

typedef struct bus_conn bus_conn;

/*
 * An event loop a connection runs on instead of nats.c's own threads (a
 * reader and a flusher per connection): loop and nats.c's adapter for
 * it, e.g. natsLibuv_Attach/Read/Write/Detach of <nats/adapters/libuv.h>,
 * each cast to bus_fn (libbus itself links no event library). Such a
 * connection is opened on the loop's thread (the adapter attaches it
 * there); its subscriptions' messages come from nats.c's shared delivery
 * threads, so one process holds thousands of connections on a few
 * threads. Calls that wait for a reply must not be made on the loop's
 * thread: the reply would be read there.
 */
typedef void (*bus_fn)(void);
typedef struct bus_conn_loop {
  void *loop;
  bus_fn attach, read, write, detach;
} bus_conn_loop;

typedef struct bus_conn_opts {
  const char *url;          /* "nats://127.0.0.1:4222"; a comma list too */
  const char *creds;        /* nkey seed file written by larkctl; NULL: none */
  const char *inbox_prefix; /* "_INBOX_gpu-1" for an edge node; NULL: with
                               creds "_INBOX_<public key>", which the broker
                               pins to this principal, else _INBOX */
  int inbox_own;          /* kept for callers: the key prefix is the default */
  const char *name;       /* connection name the server shows */
  int js_wait_ms;         /* JetStream API wait; default 5000 */
  int connect_timeout_ms; /* first connect; default 2000 */
  int max_async_pending;  /* async appends in flight; default 4000 */
  int retry_on_failed_connect; /* keep trying in the background if the
                                  first connect fails; default 0 */
  const bus_conn_loop *loop;   /* NULL: nats.c's threads (bus_conn_loop) */
  int send_asap; /* 1: each publish written at once by the thread making it,
                    not handed to the connection's flusher (or loop): fewer
                    thread switches where little is sent at a time, more
                    writes where much is; default 0 */
} bus_conn_opts;

void bus_conn_opts_init(bus_conn_opts *o);

/*
 * Connect. Reconnects forever with backoff (capped at 2 s) once connected.
 * Returns BUS_ECONN when no server answers, BUS_EAUTH when the server
 * refuses the credentials (or anonymous access), -errno when the creds
 * file cannot be read.
 */
int bus_conn_open(bus_conn **out, const bus_conn_opts *o);
/*
 * Whether the connection is closed for good: nats.c gives up on a
 * broker that refuses the credentials twice in a row. Reconnecting is
 * not closed. A long-running process checks this and exits non-zero, so
 * its supervisor starts it again with a fresh connection.
 */
int bus_conn_closed(const bus_conn *c);
/* How many times the connection was made again so far: what a broker held
 * in memory for it (node streams, consumers) may be gone since. */
unsigned long bus_conn_reconnects(const bus_conn *c);
/* The last error the broker or nats.c gave this connection, as nats.c
 * words it ("Authorization Violation" for credentials refused); "" when
 * none. Valid until the connection's next error or its close. */
const char *bus_conn_last_error(const bus_conn *c);
void bus_conn_close(bus_conn *c);
/* Close the connection and keep the handle: every call waiting on the
 * broker (a held pull, an append awaiting its ack) returns an error now
 * and no other starts; bus_conn_close frees it after. For a process that
 * stops threads waiting on the broker. */
void bus_conn_shutdown(bus_conn *c);

/* Core-NATS request/reply. *reply is malloc'd; the caller frees it.
 * BUS_EDENIED when the broker refused the publish (the principal may not
 * send on subject), BUS_ETIMEOUT when nobody answered in time. */
int bus_conn_request(bus_conn *c, const char *subject, const void *data,
                     size_t len, int timeout_ms, void **reply,
                     size_t *reply_len);

/*
 * Send a request and gather every reply that arrives within window_ms
 * (used by `larkctl status` to hear from all services at once). cb is
 * called in the caller's thread for each reply; returns the count, or
 * BUS_EDENIED when none came and the broker refused the publish.
 */
typedef void (*bus_reply_cb)(const void *data, size_t len, void *ud);
int bus_conn_gather(bus_conn *c, const char *subject, const void *data,
                    size_t len, int window_ms, bus_reply_cb cb, void *ud);

/* Core-NATS publish (no JetStream), e.g. a reply. */
int bus_conn_publish(bus_conn *c, const char *subject, const void *data,
                     size_t len);
/* The same with a reply subject: the answer comes to a bus_conn_serve of
 * it, without waiting on this thread (a connection on an event loop). */
int bus_conn_publish_reply(bus_conn *c, const char *subject, const char *reply,
                           const void *data, size_t len);

/*
 * Serve requests on subject (queue group queue, or NULL) from nats.c's
 * delivery thread: handler gets the request and the reply subject (NULL
 * when none) and answers with bus_conn_publish. The subscription lives
 * until bus_conn_unserve or the connection closes.
 */
typedef struct bus_serve bus_serve;
typedef void (*bus_serve_cb)(bus_conn *c, const char *subject,
                             const char *reply, const void *data, size_t len,
                             void *ud);
int bus_conn_serve(bus_conn *c, const char *subject, const char *queue,
                   bus_serve_cb cb, void *ud, bus_serve **out);
void bus_conn_unserve(bus_serve *s);

/* ----------------------------------------------------------------- streams */

/*
 * The platform's streams (docs/design.md section 2), defined once here.
 * bus_streams_ensure creates each one that is missing and updates each one
 * whose settings differ; it is idempotent. Only `larkctl init` calls it.
 */
typedef struct bus_streams_opts {
  int replicas;        /* 1 (default) or 3 */
  int64_t dedupe_ns;   /* LARK_EVENTS duplicate window; default 2 min */
  int64_t runs_age_ns; /* LARK_RUNS max age; default 30 days */
  int64_t logs_age_ns; /* LARK_LOGS max age; default 7 days */
  int64_t logs_bytes;  /* LARK_LOGS max bytes; default 1 GiB */
  int memory;          /* memory storage (benchmarks only); default file */
} bus_streams_opts;

void bus_streams_opts_init(bus_streams_opts *o);
int bus_streams_ensure(bus_conn *c, const bus_streams_opts *o);

/* Names of the streams, NULL-terminated: LARK_EVENTS, LARK_RUNS, ...
 * (the node streams below are not among them). bus_streams_ensure also
 * deletes a LARK_NODES stream left by earlier versions: its subjects,
 * lark.node.>, overlap every node stream's. */
extern const char *const bus_stream_names[];

/* A stream's message size limit (max_msg_size, headers included), as
 * bus_streams_ensure sets it; LARK_NODE_<node> too. 0 for another name. */
int32_t bus_stream_msg_max(const char *stream);

/* Delete a stream; BUS_ENO_STREAM when there is none. */
int bus_stream_delete(bus_conn *c, const char *name);

/*
 * Node streams. Each node's desired states are a stream of the node's
 * own: LARK_NODE_<node>, subjects lark.node.<node>.>, one message per
 * subject (the latest desired state of each pod), with the replicas and
 * duplicate window of LARK_EVENTS, kept in memory (a projection its
 * writers send again when a restarted broker lost it:
 * bus_view_node_streams_repair). The scheduler makes one when it first
 * knows a node; the node reads it through its pinned consumer and nothing
 * else. (On one stream for the whole fleet, server 2.9 scans every pod
 * subject of the fleet for each delivery to a node; see
 * docs/decisions.md.)
 */
#define BUS_NODE_STREAM_PREFIX "LARK_NODE_"
#define BUS_NODE_STREAM_MAX (sizeof BUS_NODE_STREAM_PREFIX + BUS_NAME_MAX)

/*
 * A node's push subject. What an outbox writes into a node's stream on
 * lark.node.<node>.<rest> it first sends as a core message, the event's
 * bytes as stored, on lark.push.<node>.<rest> (bus_outbox_drain): the
 * broker lets only services publish there and only that node subscribe,
 * so the node has its desired state without waiting for the store, and
 * takes the stored copy after it as nothing new (the same version). A
 * push may be lost (a node reconnecting, a full buffer); the stream is
 * the node's reliable path and the push only its fast one.
 */
#define BUS_NODE_PUSH_PREFIX "lark.push."
/* The push subject of a node-stream subject into out: 0, or BUS_EINVAL
 * when subject is not lark.node.<node>.<rest> (without error text when it
 * is not under lark.node. at all: the outbox asks it of every entry). */
int bus_node_push_subject(const char *subject, char *out, size_t cap);
/* The other way: the node-stream subject a push subject stands for
 * (lark.push.<node>.<rest> -> lark.node.<node>.<rest>). */
int bus_node_pushed_subject(const char *push, char *out, size_t cap);

/* "LARK_NODE_<node>" into out. BUS_ENAME when node is not a name. */
int bus_node_stream_name(const char *node, char *out, size_t cap);
/*
 * Create node's stream when missing, or bring it to its settings;
 * *created (may be NULL) is 1 when it was made now. BUS_ENO_STREAM when
 * LARK_EVENTS (whose settings it takes) is missing.
 */
int bus_node_stream_ensure(bus_conn *c, const char *node, int *created);
/* The same for n nodes, reading LARK_EVENTS' settings once; *created
 * counts the streams made now. Stops at the first failure. */
int bus_node_streams_ensure(bus_conn *c, const char *const *nodes, size_t n,
                            int *created);
/* The same, and born[i] the creation time of nodes[i]'s stream (the
 * broker's clock, ns: a stream made anew has another), made_now[i] 1 when
 * it was made now (either may be NULL). */
int bus_node_streams_born(bus_conn *c, const char *const *nodes, size_t n,
                          int64_t *born, unsigned char *made_now, int *created);

/*
 * The nodes whose streams the broker has now (STREAM.NAMES filtered on
 * lark.node.>, 1,024 a page), each given to cb; a non-zero return of cb
 * stops the listing and is returned.
 */
int bus_node_streams_list(bus_conn *c, int (*cb)(const char *node, void *ud),
                          void *ud);

/*
 * Check that every stream in names (NULL-terminated) exists. On failure
 * returns BUS_ENO_STREAM and bus_last_error() names each missing stream and
 * says to run `larkctl init`.
 */
int bus_streams_require(bus_conn *c, const char *const *names);

/* The stream's last sequence (0 when empty). */
int bus_stream_last_seq(bus_conn *c, const char *stream, uint64_t *seq);

/* ------------------------------------------------------------------ append */

enum {
  BUS_APPEND_NOCHECK = 0, /* append-only logs: no version check */
  BUS_APPEND_CHECK = 1,   /* ExpectLastSubjectSeq = prev, or
                             ExpectNoMessage when prev == 0 */
  /* An outbox entry only (bus_txn_emit), after a BUS_APPEND_CHECK entry
   * on the same subject: a chain. The outbox publishes the head and its
   * chained entries as one atomic batch, the head checked at its prev and
   * each next one's prev set to the sequence of the one before (the
   * batch expects the stream's end, so their sequences are known): all
   * land or none. A chained entry whose head an earlier drain settled is
   * dropped as a conflicting entry is (unless it is found stored). Lets
   * one decide pass put several events on one checked subject. */
  BUS_APPEND_CHAIN = 2
};

/*
 * Append ev to subject and wait for the broker's ack. Sets Nats-Msg-Id to
 * ev->id and Lark-Type to ev->type. With BUS_APPEND_CHECK a broker-side
 * version mismatch returns BUS_ECONFLICT. A duplicate id inside the dedupe
 * window returns 0 with the original's sequence and *dup = 1 (dup may be
 * NULL). seq may be NULL.
 */
int bus_append(bus_conn *c, const char *subject, const bus_event *ev, int flags,
               uint64_t *seq, int *dup);

/*
 * Append without waiting: the event is encoded and handed to nats.c, which
 * keeps at most max_async_pending in flight (this call blocks while the
 * window is full). Failures are counted; bus_append_flush waits for every
 * outstanding ack and returns BUS_ECONFLICT/BUS_EBROKER/BUS_ETIMEOUT if any
 * failed since the last flush, with the count in *failed (may be NULL).
 */
int bus_append_async(bus_conn *c, const char *subject, const bus_event *ev,
                     int flags);
int bus_append_flush(bus_conn *c, int timeout_ms, uint64_t *failed);

/*
 * Several appends at once, each to its own subject with its own flags
 * (BUS_APPEND_NOCHECK or BUS_APPEND_CHECK at ev->prev), possibly to
 * several streams: all sent without waiting, then each settled by its own
 * answer, in order. One refused for its version check gets BUS_ECONFLICT;
 * one not sent, not answered or refused otherwise is appended again alone
 * with bus_append. So every item's rc, seq and dup are what bus_append
 * would have said of it alone. Returns 0.
 */
typedef struct bus_append_item {
  const char *subject;
  const bus_event *ev; /* with id, type (or t) and, checked, prev */
  int flags;
  int rc;       /* out */
  uint64_t seq; /* out */
  int dup;      /* out */
} bus_append_item;
int bus_append_many(bus_conn *c, bus_append_item *items, size_t n);

/*
 * Atomic batches (nats-server 2.12 and later).
 *
 * bus_append_atomic appends n events to one stream as a single atomic
 * batch: the broker stores all of them, in order and contiguous in the
 * stream, or none. Each event carries Nats-Msg-Id = ev->id and Lark-Type
 * as with bus_append; with BUS_APPEND_CHECK in an item's flags its subject
 * must be at ev->prev (0: empty) when the batch commits. On success
 * *last_seq (may be NULL) is the sequence of the last event; the first is
 * *last_seq - n + 1.
 *
 * Its worth: on a broker that syncs before each ack (sync_interval:
 * always) the batch is synced once, not once per event.
 *
 * Limits: at most BUS_ATOMIC_MAX events (the server's default
 * jetstream.limits.batch.max_msgs); one stream, which must allow atomic
 * batches (bus_stream_allow_atomic); a subject checked with
 * BUS_APPEND_CHECK may appear only once in the batch; the server keeps at
 * most 50 batches in flight per stream and drops a batch whose commit does
 * not come within 10 s. The call waits for the commit's answer (the
 * connection's JetStream wait).
 *
 * Errors (nothing stored in each case but BUS_ETIMEOUT):
 *   BUS_EINVAL     no events, or an event without subject, id or type
 *   BUS_ETOO_BIG   more than BUS_ATOMIC_MAX events (refused before sending),
 *                  more than the server's own limit, or an event too big
 *                  to encode (what was sent of the batch is discarded)
 *   BUS_ECONFLICT  a checked subject has moved on, or is checked twice
 *   BUS_EEXISTS    an event id is already stored within the duplicate
 *                  window (a retried batch that did land; unlike
 *                  bus_append, a duplicate refuses the whole batch)
 *   BUS_ENO_STREAM no stream takes the subjects, or another stream does
 *   BUS_EBROKER    anything else the broker refused (atomic batches not
 *                  allowed on the stream, too many batches in flight, a
 *                  batch incomplete at its commit); bus_last_error() has
 *                  the broker's code and words
 *   BUS_ETIMEOUT   no answer to the commit: the batch may or may not be
 *                  stored; retry with the same ids (BUS_EEXISTS tells it
 *                  was)
 */
#define BUS_ATOMIC_MAX 1000

typedef struct bus_atomic_item {
  const char *subject;
  const bus_event *ev;
  int flags; /* BUS_APPEND_NOCHECK or BUS_APPEND_CHECK */
} bus_atomic_item;

int bus_append_atomic(bus_conn *c, const char *stream,
                      const bus_atomic_item *items, size_t n,
                      uint64_t *last_seq);

/*
 * Let stream take atomic batches (allow_atomic: true, which nats.c's
 * stream config cannot say): its config is read and sent back with the
 * field set; a no-op when it is already on. BUS_ENO_STREAM when the
 * stream is missing; BUS_EBROKER when the broker refuses (before 2.12).
 */
int bus_stream_allow_atomic(bus_conn *c, const char *stream);

/*
 * The last message on subject in stream, decoded into ev (allocated from
 * zone) with its seq. BUS_ENOT_FOUND when the subject is empty.
 */
int bus_last_event(bus_conn *c, const char *stream, const char *subject,
                   bus_event *ev, msgpack_zone *zone);
/* Only its seq, into *seq (0 when there is none or it cannot be read):
 * the subject's own version, for a writer whose view lags the stream. */
int bus_last_event_seq(bus_conn *c, const char *stream, const char *subject,
                       uint64_t *seq);

/*
 * Append an observation (a node's report, a stage's start): ev on subject
 * with the version check at prev, the writer's view of the subject, which
 * may lag it. On a conflict the subject's last event in stream is read:
 * if its id is ev->id an earlier try landed and ev is stored; otherwise ev
 * is appended again at that event's version. At most tries appends.
 * ev->id must be set (derived from what ev observes, so a repeat lands
 * once); ev->prev is overwritten. 0 when ev is stored, with its sequence
 * in *seq (seq may be NULL); BUS_ECONFLICT when tries is 1 and the subject
 * had moved on; BUS_EBUSY when others moved it on at every one of two or
 * more tries (nothing of ev stored: the caller tries again later);
 * otherwise an error of bus_append or bus_last_event.
 */
int bus_append_rebased(bus_conn *c, const char *stream, const char *subject,
                       bus_event *ev, uint64_t prev, int tries, uint64_t *seq);

/* Remove every message on subject from stream (node stream clean-up). */
int bus_purge_subject(bus_conn *c, const char *stream, const char *subject);

/* ---------------------------------------------------------------- consumer */

typedef struct bus_consumer bus_consumer;

enum {
  BUS_DELIVER_ALL = 0,
  BUS_DELIVER_FROM_SEQ = 1,  /* start_seq */
  BUS_DELIVER_FROM_TIME = 2, /* start_ns, rounded down to a tenth of a
                                second: earlier messages may come first */
  BUS_DELIVER_LAST_PER_SUBJECT = 3,
  BUS_DELIVER_NEW = 4
};

/* Granularity of BUS_DELIVER_FROM_TIME (bus_reader filters exactly). */
#define BUS_START_TIME_STEP_NS INT64_C(100000000)

typedef struct bus_consumer_opts {
  const char *stream;
  const char *durable; /* durable name; NULL: ephemeral, gone on close */
  const char *name;    /* without durable: name the ephemeral consumer, so
                          the create subject carries it and the filter
                          (broker rules can pin both); NULL: unnamed */
  const char *filter;  /* one filter subject (2.9 takes one); NULL: all */
  int deliver;         /* BUS_DELIVER_* */
  uint64_t start_seq;
  int64_t start_ns;
  int ack_none;        /* 1: no acks (replay); 0: explicit acks */
  int ack_all;         /* 1: an ack covers every earlier message too, and
                          bus_batch_ack acks only a batch's last one */
  int memory_state;    /* 1: the broker keeps the consumer's position in
                          memory only, saving a state file write per
                          delivery; a broker restart forgets the consumer,
                          so only for one its reader can make again from
                          the stream (deliver last per subject) */
  int max_ack_pending; /* default 20000 */
  int64_t ack_wait_ns; /* default 30 s */
  int recreate;        /* durable or named: delete any existing one first,
                          so the deliver settings here take effect */
  int ordered;         /* 1: a fetch checks the broker's delivery numbering;
                          after a hole (a pull answered into a broken
                          connection, a message another client took) it
                          returns what came before it, and the next fetch
                          fails with BUS_ENOT_FOUND: open the consumer
                          again (with recreate) to be fed from the stream */
  int held;            /* 1 (durable or named): one pull request stays open
                          across messages, for up to 1,000 of them or the
                          fetch's wait, and the broker pushes each message
                          as it is stored; no request and end status per
                          fetch. A reconnection, or the consumer deleted,
                          is noticed within a second, not at the end of
                          the request */
} bus_consumer_opts;

void bus_consumer_opts_init(bus_consumer_opts *o);

/*
 * The consumer a node reads its own stream with (lark-edge's slice thread,
 * and what stands in for it in tests and benchmarks): durable edge-<node>
 * on LARK_NODE_<node>, filter lark.node.<node>.>, deliver last per
 * subject, one ack per batch, its position in the broker's memory (opened
 * again after a broker restart, it hands over every pod's current state).
 * The broker's rules for a node allow exactly this consumer (docs/design.md
 * section 6). opts points into the struct; change a field to try another.
 */
/* How often a consumer that keeps fetching nothing asks whether it is
 * still there (bus_consumer_fetch): an idle node's one periodic request
 * besides its pull and its heartbeat, and its dearest (the answer is a
 * kilobyte). Only a backstop: server 2.10+ answers a pull to a consumer
 * that is gone with 503, which forces the check at once. */
#define BUS_CONSUMER_CHECK_MS 600000

typedef struct bus_slice {
  char stream[BUS_NODE_STREAM_MAX];
  char durable[BUS_NAME_MAX + 6];
  char filter[BUS_SUBJECT_MAX];
  bus_consumer_opts opts;
} bus_slice;

/* BUS_ENAME when node is not a name. */
int bus_slice_init(bus_slice *s, const char *node);

/*
 * Open a pull consumer. A durable one is created with
 * jsSubOptions.Config.Name == Durable (docs/design.md section 6), so an edge
 * node's permissions allow it; a named ephemeral one (name set, durable
 * NULL) goes through the same filter-carrying subject,
 * $JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>. Creating a name that
 * exists with the same settings joins the existing consumer where it
 * stands (server 2.9): set recreate to start afresh. BUS_ENO_STREAM when
 * the stream is missing, BUS_EDENIED (after the JetStream wait) when
 * permissions refuse.
 */
int bus_consumer_open(bus_conn *c, const bus_consumer_opts *o,
                      bus_consumer **out);
/* Closes the subscription. A durable consumer stays on the server; an
 * ephemeral one, named or not, is deleted by the server after 10 s
 * without a fetch (deleting it at once takes a permission most
 * principals lack: bus_consumer_delete it if yours has it). Call it
 * before bus_conn_close of its connection: the subscription itself is
 * freed a little later, at the latest with the connection. */
void bus_consumer_close(bus_consumer *k);
/* Delete a durable or named consumer from the server; BUS_ENOT_FOUND when
 * there is none. */
int bus_consumer_delete(bus_conn *c, const char *stream, const char *durable);
/*
 * A consumer name for c's principal: "<prefix>-<its nkey public key>", so
 * the broker's rules can name exactly the consumers that principal may
 * create and read (deploy/policy.c, roles relay and relay-hub). One such
 * consumer per stream and principal: two readers sharing credentials
 * would share it. A connection without credentials gets "<prefix>-"
 * and 16 random hex digits instead. BUS_EINVAL when prefix is not a
 * name (bus_name_valid) or out is smaller than strlen(prefix) + 58.
 */
int bus_consumer_name(bus_conn *c, const char *prefix, char *out, size_t cap);
/* Messages the consumer has not yet delivered. */
int bus_consumer_pending(bus_consumer *k, uint64_t *pending);

/* Where a durable or named consumer stands, as its info says. */
typedef struct bus_consumer_state {
  uint64_t pending;     /* of its filter, not yet delivered */
  uint64_t ack_pending; /* delivered, not acknowledged */
  uint64_t ack_floor;   /* stream sequence: everything to it is acked */
  uint64_t delivered;   /* stream sequence of its last delivery */
  uint64_t delivered_n; /* the number the consumer gave that delivery */
} bus_consumer_state;
/* The state of consumer durable on stream; BUS_ENOT_FOUND when there is
 * none. */
int bus_consumer_state_get(bus_conn *c, const char *stream, const char *durable,
                           bus_consumer_state *st);

/*
 * A batch of fetched messages and their decoded events. Owns the natsMsgs
 * and the zone the events point into, until cleared, refilled or freed.
 */
typedef struct bus_batch bus_batch;

int bus_batch_new(bus_batch **out);
void bus_batch_free(bus_batch *b);
void bus_batch_clear(bus_batch *b);
size_t bus_batch_len(const bus_batch *b);
/*
 * Event i, or NULL when its message could not be decoded; then
 * bus_batch_status(b, i) is the decoder's error. The delivery fields are
 * set either way through bus_batch_meta.
 */
const bus_event *bus_batch_event(const bus_batch *b, size_t i);
int bus_batch_status(const bus_batch *b, size_t i);
void bus_batch_meta(const bus_batch *b, size_t i, const char **subject,
                    uint64_t *seq, int64_t *stored_ns);
/* Raw body of message i. */
void bus_batch_data(const bus_batch *b, size_t i, const void **data,
                    size_t *len);

/*
 * Fetch up to max messages, waiting at most timeout_ms for the first (0: a
 * short look at what is there): it returns as soon as any are there, with
 * all there are up to max. The batch is cleared first. Returns 0 with an
 * empty batch when nothing came (a timeout is "nothing yet", docs/design.md
 * section 10). BUS_ECONN when the broker is out of reach; BUS_ENOT_FOUND
 * when the consumer is gone (deleted with its stream, or forgotten by a
 * restarted broker): open it again. The broker does not refuse fetches
 * from a consumer that is gone, so this is asked after a reconnection and
 * after 30 s of empty fetches.
 */
int bus_consumer_fetch(bus_consumer *k, int max, int timeout_ms, bus_batch *b);

/* Acknowledge every message of the batch (explicit-ack consumers); for
 * an ack_all consumer, one ack of the last message does it. */
int bus_batch_ack(bus_batch *b);

/* ------------------------------------------------------------------ worker */

/*
 * A thread that takes batches from a durable consumer for as long as it
 * runs, for a part that works a queue (an ingress, an appender): it opens
 * the consumer (trying once a second while the stream is not there yet),
 * opens it again when a fetch says the broker lost it, and waits a fetch's
 * wait after any other failed fetch. handle gets each batch that holds
 * messages, in the worker's thread, and acks it (bus_batch_ack) once done
 * with it; a batch left unacked comes again after the consumer's ack wait.
 * tick, when set, runs after every fetch (timed work). log, when set, gets
 * one line for each wait and reopening. The batch is valid until handle
 * returns.
 */
typedef struct bus_worker bus_worker;

typedef struct bus_worker_opts {
  bus_consumer_opts consumer; /* its stream and durable are required */
  int batch;                  /* messages per fetch; default 256 */
  int wait_ms;                /* a fetch's wait; default 200 */
  void (*handle)(bus_worker *w, bus_batch *b, void *ud);
  void (*tick)(bus_worker *w, void *ud);
  void (*log)(const char *line, void *ud);
  void *ud;
} bus_worker_opts;

void bus_worker_opts_init(bus_worker_opts *o);
int bus_worker_start(bus_conn *c, const bus_worker_opts *o, bus_worker **out);
/* Set once bus_worker_stop was called: a handler retrying in place gives up
 * (and leaves its batch unacked). */
int bus_worker_stopping(const bus_worker *w);
/* Sleep ms, or less when told to stop. */
void bus_worker_nap(const bus_worker *w, int ms);
/* Stop: the current handle returns, the thread is joined, w is freed. */
void bus_worker_stop(bus_worker *w);

/* ------------------------------------------------------------------ replay */

/*
 * Ordered reading of a stream from a sequence up to a bound, for rebuilds
 * and `larkctl tail`. The upper bound is fixed at open: min(until_seq, the
 * stream's last sequence then); until_ns stops at the first message stored
 * after that time. bus_reader_next fills b and returns BUS_EEOF once the
 * bound is reached (b may still hold the last messages: check its length).
 * With follow set there is no bound and next waits for new messages.
 */
typedef struct bus_reader bus_reader;

typedef struct bus_reader_opts {
  const char *stream;
  const char *filter;
  uint64_t from_seq;  /* default 1 */
  int64_t since_ns;   /* start by time instead (0: use from_seq) */
  uint64_t until_seq; /* 0: no bound */
  int64_t until_ns;   /* 0: no bound */
  int batch;          /* default 1024 */
  int follow;
  int direct; /* read by batch direct gets ($JS.API.DIRECT.GET.<stream>),
                 with no consumer, for a principal that may make none (a
                 user); the stream must allow direct gets. follow polls. */
} bus_reader_opts;

void bus_reader_opts_init(bus_reader_opts *o);
int bus_reader_open(bus_conn *c, const bus_reader_opts *o, bus_reader **out);
int bus_reader_next(bus_reader *r, bus_batch *b, int timeout_ms);
/* The bound fixed at open (0 with follow). */
uint64_t bus_reader_end_seq(const bus_reader *r);
void bus_reader_close(bus_reader *r);

/*
 * The audit trail, for `larkctl tail` and the gateway's events feed:
 * LARK_EVENTS and LARK_RUNS through bus_readers, merged in stored-time
 * order, or the one stream a filter under lark.ev. or lark.run. names;
 * kept when the type and actor match (a message that does not decode
 * only when neither is asked for).
 */
typedef struct bus_tail bus_tail;

typedef struct bus_tail_opts {
  const char *filter; /* a subject filter; NULL: both streams whole */
  const char *type;   /* "job.phase", or "job.*" for every job.<verb> */
  const char *actor;  /* exact; NULL: any */
  uint64_t from_seq;  /* each stream from there (default 1) */
  int64_t since_ns;   /* from that stored time instead (0: from_seq) */
  int follow;
  int direct; /* as bus_reader_opts.direct (a user's tail) */
} bus_tail_opts;

/* One message: valid until the next call. ev NULL: it did not decode,
 * status says why. */
typedef struct bus_tail_msg {
  const char *stream, *subject;
  uint64_t seq;
  int64_t stored_ns;
  const bus_event *ev;
  int status;
} bus_tail_msg;

void bus_tail_opts_init(bus_tail_opts *o);
/* BUS_EINVAL for a filter under neither stream; the readers' errors. */
int bus_tail_open(bus_conn *c, const bus_tail_opts *o, bus_tail **out);
/* 1 with the next message in *m, 0 when none came within timeout_ms,
 * BUS_EEOF when a tail that does not follow has given everything. */
int bus_tail_next(bus_tail *t, bus_tail_msg *m, int timeout_ms);
void bus_tail_close(bus_tail *t);
/* want "job.*": any type job.<verb>; else equal; NULL or "": any. */
int bus_type_matches(const char *want, const char *type);

/*
 * The lines of log.batch events (LARK_LOGS), for `larkctl logs` and the
 * gateway's logs feed: collect batches as read, then sort by each line's
 * ts (the node's read time; ties keep arrival order). Start from a zeroed
 * struct; since_ns drops earlier lines. A line's src indexes srcs, which
 * bus_log_lines_clear keeps.
 */
typedef struct bus_log_src {
  char job[BUS_NAME_MAX + 1];
  char task[BUS_DERIVED_NAME_MAX + 1];
  char pod[BUS_DERIVED_NAME_MAX + 1];
  char node[BUS_NAME_MAX + 1];
  uint32_t attempt;
} bus_log_src;

typedef struct bus_log_entry {
  int64_t ts;
  uint64_t seq;   /* the stream sequence of the batch it came in */
  uint64_t order; /* arrival */
  uint32_t src;
  int err; /* stderr */
  char *text;
  size_t len;
} bus_log_entry;

typedef struct bus_log_lines {
  bus_log_entry *lines;
  size_t n, cap;
  uint64_t order;
  bus_log_src *srcs;
  size_t nsrc, srccap;
  int64_t since_ns;
} bus_log_lines;

/* Every line of the batch's log.batch events (other messages skipped). */
int bus_log_lines_collect(bus_log_lines *l, const bus_batch *b);
void bus_log_lines_sort(bus_log_lines *l);
void bus_log_lines_clear(bus_log_lines *l); /* the lines; srcs kept */
void bus_log_lines_free(bus_log_lines *l);

/* -------------------------------------------------------------------- view */

typedef struct bus_view bus_view;
/*
 * Make the node streams (bus_node_streams_ensure) of every node the view
 * knows: the keys of its table, node names. What a service's repair does
 * when its outbox finds a node's stream missing; *made counts the streams
 * made now.
 */
int bus_view_node_streams_ensure(bus_conn *c, bus_view *v, const char *table,
                                 int *made);
/*
 * The same, and what the streams lack sent again: a node stream is kept
 * in memory, so a broker that restarted has none, and whoever makes them
 * again first, the others find them there, empty. So each stream's
 * creation time is remembered in the view (its _effects, "sc:<node>"); a
 * stream made now, or born at another time than remembered, has lost
 * what the service sent into it. Then the service's send queue, the one
 * bus_txn_sendq walks with the note queue_note, is rewound (the note
 * deleted) and a decide pass runs (bus_view_tick): every entry of the
 * queue is sent again, with the ids it had. Where a stream still held
 * one, the broker drops the copy (inside the duplicate window) or the
 * node keeps what it has (the same version). *made counts the streams
 * made now, *anew those found made anew.
 */
int bus_view_node_streams_repair(bus_conn *c, bus_view *v, const char *table,
                                 const char *queue_note, int *made, int *anew);
typedef struct bus_txn bus_txn;

/*
 * A view definition: its name, its tables, two functions, and its input.
 *
 * apply(t, ev) is a pure state update: it reads and writes the view's
 * tables through t and reads no clock. Returning a negative code aborts
 * the whole batch (a store error); returning BUS_EINVAL or BUS_EFIELD
 * marks the event rejected (counted, skipped, the batch goes on).
 *
 * decide(t, cause, now) runs in live mode only (effects on): after each
 * applied event (cause = that event), once more at the end of every batch
 * that applied an event, and on timer ticks (both with cause = NULL: look
 * at the whole view). It may emit events into the outbox with
 * bus_txn_emit, and remember what it emitted with bus_txn_mark, in the
 * same transaction; it writes no view table (replay runs without it). A
 * decided event's ts is its cause's.
 *
 * Before apply, the view checks `prev` for subjects under lark.ev.: an
 * event whose prev is not the aggregate's current version is ignored and
 * counted as stale (docs/design.md section 3); apply never sees it.
 */
typedef struct bus_view_def {
  const char *name;
  const char *const *tables; /* NULL-terminated; names not starting '_' */
  int (*apply)(bus_txn *t, const bus_event *ev, void *ud);
  int (*decide)(bus_txn *t, const bus_event *cause, int64_t now_ns, void *ud);
  void *ud;
  /* Its input, stated once: the stream and subject filter the service
   * loop consumes and a rebuild reads (NULL: LARK_EVENTS, lark.ev.>). */
  const char *stream;
  const char *filter;
  /* The least map size the view needs (0: the options' alone): a view
   * that keeps history grows beyond the 1 GiB default. Address space
   * only: the file grows as it is used. */
  size_t map_size;
  /* May be NULL. commit(t) runs in a batch's write transaction after its
   * last event (and decide), just before it commits, bus_txn_commit's too
   * (an error aborts the batch);
   * abort(v) after a batch's transaction was aborted. A view whose apply
   * holds other views' write transactions open across the batch (see
   * bus_view_write) commits or drops them there. */
  int (*commit)(bus_txn *t, void *ud);
  void (*abort)(bus_view *v, void *ud);
  /* The layout of what apply writes (0: not kept). A view opened under
   * another layout than the one it was written with (or under its first,
   * written before layouts were kept) is emptied, its outbox and
   * counters too, and its service rebuilds it from sequence 1: what
   * moving its directory away does by hand. bus_view_relaid tells. */
  uint32_t layout;
} bus_view_def;

typedef struct bus_view_opts {
  const char *dir; /* created if missing */
  size_t map_size; /* default 1 GiB */
  int nosync;      /* MDB_NOSYNC: replay; one bus_view_sync at the end */
  int effects;     /* 1: call decide (live). 0: replay */
} bus_view_opts;

void bus_view_opts_init(bus_view_opts *o);

/*
 * Open (or create) the view in o->dir. A directory holding another view's
 * data returns BUS_ECORRUPT. def is copied; def->ud must outlive the view.
 */
int bus_view_open(bus_view **out, const bus_view_def *def,
                  const bus_view_opts *o);
void bus_view_close(bus_view *v);
/* 1 when bus_view_open emptied the view for its new layout (def.layout). */
int bus_view_relaid(const bus_view *v);
int bus_view_sync(bus_view *v);

/*
 * Apply events in one write transaction, together with the new applied
 * sequence. Events with seq <= the applied sequence are skipped (a
 * redelivery). Every event must carry its seq (and subject). An event
 * built by hand (t unset) reaches the view's apply with t looked up from
 * its type name. On error nothing of the batch is kept.
 */
int bus_view_apply(bus_view *v, const bus_event *const *evs, size_t n);
/* Same, taking a fetched batch: an undecodable message advances the
 * applied sequence and is counted as rejected; it stays in the stream. */
int bus_view_apply_batch(bus_view *v, const bus_batch *b);
/* Run decide with cause NULL (a timer tick) in its own transaction. */
int bus_view_tick(bus_view *v, int64_t now_ns);
/*
 * decide asks for another pass of its own (cause NULL, as a tick) once
 * this transaction is committed and its decisions are sent: what it left
 * for that pass then does not hold back what it decided now (the
 * scheduler's placements go out before the desired states of the Jobs
 * placed earlier are written). bus_service_run runs that pass right after
 * the outbox is drained; bus_view_take_again tells (and forgets) whether a
 * committed transaction asked for one.
 */
void bus_txn_decide_again(bus_txn *t);
int bus_view_take_again(bus_view *v);

/*
 * A write transaction the caller holds open across calls, so that events
 * given one at a time cost one commit: bus_view_write begins it (one per
 * view at a time, used and ended on one thread), bus_txn_apply applies an
 * event into it exactly as bus_view_apply would (seq <= the applied
 * sequence skipped, prev checked, decide run), reads go through it as
 * through any transaction and see what it applied, and bus_txn_commit
 * commits it (runs decide's end of batch and the view's commit hook
 * first) and frees it, or
 * bus_txn_end drops it whole. After an error from bus_txn_apply, end it.
 */
int bus_view_write(bus_view *v, bus_txn **out);
int bus_txn_apply(bus_txn *t, const bus_event *ev);
int bus_txn_commit(bus_txn *t);

typedef struct bus_view_stats {
  uint64_t applied_seq; /* last stream sequence applied */
  int64_t applied_ns;   /* its stored time in the stream; 0: not known */
  uint64_t applied;     /* events given to apply */
  uint64_t stale;       /* ignored: prev was not the current version */
  uint64_t rejected;    /* undecodable or refused by apply */
  uint64_t outbox;      /* decisions not yet published */
} bus_view_stats;

int bus_view_stats_get(bus_view *v, bus_view_stats *s);
const char *bus_view_name(const bus_view *v);
/* The directory the view was opened in. */
const char *bus_view_dir(const bus_view *v);
/* The view a transaction belongs to (apply may find its own state). */
bus_view *bus_txn_view(bus_txn *t);
/*
 * State a definition keeps beside one open view (a view that holds other
 * views, say): set by apply's thread, released (release(p), when not
 * NULL) by bus_view_close before the view's store is closed.
 */
void bus_view_attach(bus_view *v, void *p, void (*release)(void *p));
void *bus_view_attached(const bus_view *v);

/*
 * Wait until the view has applied stream sequence seq (its applied
 * sequence is seq or more). Every commit of the view (the service loop's,
 * after each batch) wakes the waiters with the sequence it committed: no
 * polling. 0 at once when already applied; BUS_ETIMEOUT after timeout_ms,
 * with bus_last_error() naming the sequence waited for and the one
 * applied. Any thread may wait, several at once; a waiter holds no lock
 * the service loop needs.
 */
int bus_view_wait_applied(bus_view *v, uint64_t seq, int timeout_ms);

/*
 * SHA-256 over (table, key, value) in key order of every view table (the
 * def's tables and _versions; not _meta, _outbox or _effects), read in one
 * consistent
 * transaction, with the applied sequence it describes.
 */
int bus_view_digest(bus_view *v, uint8_t out[32], uint64_t *seq);
/* Hex form of a digest into out[65]. */
void bus_digest_hex(const uint8_t d[32], char out[65]);

/* A compacted copy of the view (with its applied sequence) into path,
 * which must not exist; the copy is a directory bus_view_open opens. */
int bus_view_snapshot(bus_view *v, const char *path);

/*
 * Transactions. bus_view_read opens a read-only one (any thread); the
 * write transactions are the ones apply and decide receive. Values
 * returned by get point into the map and stay valid until the transaction
 * ends.
 */
int bus_view_read(bus_view *v, bus_txn **out);
void bus_txn_end(bus_txn *t);
/*
 * fn(t, ud) in a read transaction of its own, ended after: fn's result,
 * or bus_view_read's error. For a query that reads and returns:
 *
 *   static int count_jobs(bus_txn *t, void *ud) { ... }
 *   rc = bus_view_read_with(v, count_jobs, &n);
 */
typedef int (*bus_read_fn)(bus_txn *t, void *ud);
int bus_view_read_with(bus_view *v, bus_read_fn fn, void *ud);

int bus_txn_put(bus_txn *t, const char *table, const void *key, size_t klen,
                const void *val, size_t vlen);
/* BUS_ENOT_FOUND when absent. */
int bus_txn_get(bus_txn *t, const char *table, const void *key, size_t klen,
                const void **val, size_t *vlen);
/* Deleting what is absent is not an error. */
int bus_txn_del(bus_txn *t, const char *table, const void *key, size_t klen);
/* Visit every entry whose key starts with prefix (plen 0: all), in key
 * order; cb returning non-zero stops and that value is returned. */
typedef int (*bus_scan_cb)(const void *key, size_t klen, const void *val,
                           size_t vlen, void *ud);
int bus_txn_scan(bus_txn *t, const char *table, const void *prefix, size_t plen,
                 bus_scan_cb cb, void *ud);
/* Visit every entry whose key is > after (alen 0: all), in key order. */
int bus_txn_scan_after(bus_txn *t, const char *table, const void *after,
                       size_t alen, bus_scan_cb cb, void *ud);

/* The last entry whose key is <= key (*k, *kl, *val, *vlen point into the
 * map); BUS_ENOT_FOUND when every key is greater. */
int bus_txn_floor(bus_txn *t, const char *table, const void *key, size_t klen,
                  const void **k, size_t *kl, const void **val, size_t *vlen);

/* The version of an aggregate subject (seq of its last accepted event),
 * its generation and event count; zeros when never seen. */
typedef struct bus_version {
  uint64_t seq;
  uint64_t generation;
  uint64_t count;
  int deleted; /* last accepted event was <kind>.deleted */
} bus_version;
int bus_txn_version(bus_txn *t, const char *subject, bus_version *ver);

/*
 * decide's memory: marks in the _effects table (outside the digest, empty
 * in a replay) say what decide already emitted, so a later pass does not
 * emit it again while the event is on its way. bus_txn_marked returns 1
 * when key is marked, 0 when not. Unmarking what is not marked is fine;
 * apply may unmark (a no-op in replay).
 */
int bus_txn_mark(bus_txn *t, const void *key, size_t klen);
int bus_txn_marked(bus_txn *t, const void *key, size_t klen);
int bus_txn_unmark(bus_txn *t, const void *key, size_t klen);
/* A mark with a value (a cursor, say); get: BUS_ENOT_FOUND when absent. */
int bus_txn_note_put(bus_txn *t, const void *key, size_t klen, const void *val,
                     size_t vlen);
int bus_txn_note_get(bus_txn *t, const void *key, size_t klen, const void **val,
                     size_t *vlen);
/* Visit the marks and notes whose key starts with prefix, in key order
 * (bus_txn_scan of decide's memory). */
int bus_txn_notes(bus_txn *t, const void *prefix, size_t plen, bus_scan_cb cb,
                  void *ud);

/*
 * A decide pass's queue of sends: a table apply fills with keys that sort
 * in the order queued (an 8-byte big-endian sequence first), each sent
 * once, in that order. The last key sent is the note keyed note, written
 * in the same transaction as what the sends emitted, so the next pass
 * (after a crash too) resumes after it. bus_txn_sendq visits the entries
 * after it with send and ud, then keeps the last one send passed to
 * bus_sendq_sent (a key longer than BUS_SENDQ_KEY_MAX is not kept);
 * send's non-zero result stops the pass and is returned.
 */
#define BUS_SENDQ_KEY_MAX 512
typedef struct bus_sendq {
  unsigned char last[BUS_SENDQ_KEY_MAX];
  size_t last_len;
  int moved; /* a key was sent this pass: the note is written */
} bus_sendq;
int bus_txn_sendq(bus_txn *t, const char *table, const char *note, bus_sendq *q,
                  bus_scan_cb send, void *ud);
void bus_sendq_sent(bus_sendq *q, const void *key, size_t klen);

/*
 * Emit a decided event into the outbox, in t (a decide transaction). When
 * ev->id is NULL the id is derived from ev->cause and the emit's index
 * within this cause, so redoing the decision gives the same id. When
 * ev->ts is 0 the cause's ts is used. flags as for bus_append.
 */
int bus_txn_emit(bus_txn *t, const char *subject, const bus_event *ev,
                 int flags);

/*
 * Who decides, for the two below: the actor, cause and ts of what a
 * decide pass emits, as bus_txn_emit takes them (cause NULL: the cause's
 * id; ts 0: the cause's ts).
 */
typedef struct bus_decider {
  const char *actor;
  const char *cause;
  int64_t ts;
} bus_decider;
/*
 * What a service's decide emits most: an event whose data is its type's
 * generated struct (bus_ev_<type>) and whose id is derived from id_src,
 * what was decided on which version, so deciding again after a crash
 * gives the same id and the broker drops the copy. flags as for
 * bus_append.
 */
int bus_txn_emit_decided(bus_txn *t, const bus_decider *by, const char *subject,
                         bus_type type, const void *data, const char *id_src,
                         uint64_t prev, int flags);
/* The same with the broker's check (BUS_APPEND_CHECK), once: nothing when
 * its id is marked (bus_txn_mark); marked after the emit, until apply
 * sees the event and unmarks it, so the next pass does not emit it again. */
int bus_txn_emit_once(bus_txn *t, const bus_decider *by, const char *subject,
                      bus_type type, const void *data, const char *id_src,
                      uint64_t prev);

/* ------------------------------------------------------------------ outbox */

/*
 * Publish what the outbox holds, oldest first, each with the broker's
 * check and its deterministic id; delete what landed. On a conflict it
 * reads the subject's last message: when that is its own id the effect
 * already landed (even past the dedupe window); otherwise the entry is
 * dropped and counted, and decide runs again when the newer event arrives.
 * Stops at the first timeout or connection error (kept for next time).
 * *published and *dropped may be NULL.
 */
int bus_outbox_drain(bus_view *v, bus_conn *c, const char *stream,
                     uint64_t *published, uint64_t *dropped);

/* ----------------------------------------------------------------- service */

/*
 * The loop of a service: a durable pull consumer named after the view,
 * recreated at start from the view's applied sequence + 1; fetch, apply in
 * one transaction, ack, drain the outbox, tick decide every tick_ms. It
 * answers `lark.sys.status` (everyone) and `lark.sys.status.<name>` with
 * msgpack {name, seq, digest, lag, applied, stale, rejected, outbox,
 * version}, and
 * `lark.sys.snapshot.<name>` {path} by writing a snapshot of the live view
 * to path on its own host, replying {ok, path, seq} or {error}.
 * Returns when *stop_flag becomes non-zero, checked at least every
 * poll_ms.
 */
typedef struct bus_service_opts {
  const char *name;   /* the service (and consumer) name */
  const char *stream; /* default LARK_EVENTS */
  const char *filter; /* default lark.ev.> */
  int batch;          /* default 512 */
  int poll_ms;        /* default 200 */
  int tick_ms;        /* 0: no ticks */
  /* set non-zero from any thread or a signal handler: the loop returns */
  atomic_int *stop_flag;
  /* called after each committed batch (tests, logging); may be NULL */
  void (*on_batch)(const bus_view_stats *s, void *ud);
  void *ud;
  /* called when the outbox could not be published because no stream
   * takes a subject (BUS_ENO_STREAM): make what is missing. The entries
   * stay and go out at the next pass. NULL: they wait for someone else
   * to make it. */
  int (*repair)(bus_conn *c, void *ud);
  void *repair_ud;
  /* called when the service's state changes (BUS_SERVICE_DIVERGED, with
   * why: the view holds events the stream no longer has); may be NULL */
  void (*on_state)(int state, const char *why, void *ud);
  void *state_ud;
  /* the version its status reports; default bus_build_version(), NULL: none */
  const char *version;
} bus_service_opts;

/*
 * The state a service reports in its status. UP: it applies and decides.
 * DIVERGED: its view holds events the stream no longer has (an R1 server
 * that lost acknowledged writes in an OS crash): it stops applying and
 * deciding, and answers status, until its view is rebuilt.
 */
enum { BUS_SERVICE_UP = 0, BUS_SERVICE_DIVERGED = 1 };
const char *bus_service_state_name(int state);

void bus_service_opts_init(bus_service_opts *o);
/*
 * Run the loop until o->stop_flag is set: applies every event of the
 * filter exactly once and in stream order (a hole in delivery order is
 * refilled by making the consumer again after the view's applied
 * sequence; see repositions in the status), acks, publishes decisions,
 * ticks.
 */
int bus_service_run(bus_conn *c, bus_view *v, const bus_service_opts *o);

/*
 * Set *flag to 1 on SIGINT or SIGTERM, and ignore SIGPIPE (a peer gone is
 * an error from write, not the process's end): the stop_flag of a
 * process's loop. One flag per process; a later call replaces it.
 */
void bus_stop_on_signals(atomic_int *flag);

/* The status record a service answers with, decoded (larkctl status). */
typedef struct bus_status {
  char name[64];
  uint64_t seq;
  char digest[65];
  uint64_t lag, applied, stale, rejected, outbox, repositions;
  char state[16];   /* "up" or "diverged"; "up" when the record has none */
  char why[256];    /* what a state other than up means */
  char version[32]; /* the service's version; "" when it reports none */
} bus_status;
/* The project's version (CMake's PROJECT_VERSION) libbus was built as. */
const char *bus_build_version(void);
int bus_status_decode(const void *buf, size_t len, bus_status *st);
/* Ask one service for its status (request to lark.sys.status.<name>). */
int bus_status_query(bus_conn *c, const char *name, int timeout_ms,
                     bus_status *st);

/* ---------------------------------------------------------------- commands */

/*
 * Commands are core-NATS requests on lark.cmd.<user>.<kind>.<verb>; the
 * broker pins each user to its own <user> token, so the owning service
 * takes the actor from the subject, never from the body. The body is a
 * msgpack map carrying an idempotency `key`; the reply is {ok: true, seq,
 * ...} or {error: {code, message, details: [{path, reason}]}} with code a
 * bus_err_name.
 */
typedef struct bus_cmd {
  char user[BUS_NAME_MAX + 1];
  /* The principal whose inbox the reply subject names (_INBOX_<p>.), when
   * p is a name other than user: a command sent for user by another
   * principal (lark-gateway); "" otherwise (a user's own inbox is
   * _INBOX_<its key>, never a name). The broker pins user, not this: a
   * client may put any reply subject on its own commands. */
  char via[BUS_NAME_MAX + 1];
  char kind[BUS_NAME_MAX + 1];
  char verb[BUS_NAME_MAX + 1];
  char key[128];       /* the body's "key"; "" when absent */
  const char *reply;   /* reply subject; NULL when none */
  msgpack_object body; /* the whole request map, in the zone given */
} bus_cmd;

/*
 * Parse a command from its subject and body. The body is copied into zone.
 * BUS_EINVAL for a subject not of the form lark.cmd.<user>.<kind>.<verb>,
 * BUS_EMALFORMED for a body that is not one msgpack map.
 */
int bus_cmd_parse(const char *subject, const char *reply, const void *data,
                  size_t len, msgpack_zone *zone, bus_cmd *cmd);

/*
 * What a node sent on its ingress: lark.in.<node>.<kind>.<what>.<name>
 * (the broker lets a node write only its own, so <node> names the
 * sender; the name is the rest, dots and all). 0 with the tokens found,
 * in order: name (and what, kind, node before it) NULL when the subject
 * has fewer; BUS_EINVAL when it does not start lark.in. or is longer
 * than BUS_SUBJECT_MAX. The service checks kind and the tokens' lengths.
 */
typedef struct bus_in_route {
  char buf[BUS_SUBJECT_MAX];
  const char *node, *kind, *what, *name; /* in buf */
} bus_in_route;
int bus_in_route_parse(const char *subject, bus_in_route *r);

/*
 * Reply {ok: true, seq} plus the entries of extra (a packed msgpack map's
 * entries, counted by nextra; extra may be NULL).
 */
int bus_cmd_reply_ok(bus_conn *c, const bus_cmd *cmd, uint64_t seq,
                     const void *extra, size_t extra_len, uint32_t nextra);
/* Reply {error: {code: bus_err_name(err), message, details}}. */
int bus_cmd_reply_error(bus_conn *c, const bus_cmd *cmd, int err,
                        const char *message, const bus_field_err *details,
                        int ndetails);

/*
 * Serve lark.cmd.*.<kind>.* in queue group lark-<kind>: each request is
 * parsed and handed to cb (in nats.c's delivery thread); a request that
 * does not parse is answered with the error here and cb is not called.
 */
typedef void (*bus_cmd_cb)(bus_conn *c, const bus_cmd *cmd, void *ud);
int bus_cmd_serve(bus_conn *c, const char *kind, bus_cmd_cb cb, void *ud,
                  bus_serve **out);

/*
 * The event id of a command, one rule for every service:
 *   BLAKE2b-128("larkbus command id v1", kind, verb, user, key)
 * each field length-prefixed, as 32 hex digits; kind, verb and user come
 * from the subject, key from the body. The same command sent again (a
 * retry: same user, kind, verb and key) gets the same id, so the broker
 * drops the second append inside its duplicate window and answers with
 * the first one's sequence; the same key from another user, or for
 * another verb, is another command. A command without a key gets a fresh
 * random id: it is not deduplicated.
 */
void bus_cmd_event_id(const bus_cmd *cmd, char out[33]);

/*
 * Append the one event a command decides: type on subject, id from
 * bus_cmd_event_id, ts now, actor the subject's user, via cmd->via (left
 * out of the envelope when ""), cause the key, prev with the broker's
 * check (BUS_APPEND_CHECK). data is the packed msgpack map of the event's
 * data (NULL: {}). *seq and *dup as bus_append (a duplicate is the first
 * attempt's sequence, *dup = 1); either may be NULL.
 */
int bus_cmd_append(bus_conn *c, const bus_cmd *cmd, const char *subject,
                   const char *type, uint64_t prev, const void *data,
                   size_t len, uint64_t *seq, int *dup);

/*
 * The events of several commands at once, each as bus_cmd_append would
 * append it (its id, its subject checked at its prev), through
 * bus_append_many: all sent without waiting, then each settled by its own
 * answer (one not sent or unanswered appended again alone), and a
 * conflict settled as bus_cmd_append settles it (the command's own event
 * there, from an earlier attempt, is a success), so every item gets the
 * answer it would have had alone. Each item's rc and seq are set;
 * returns 0.
 */
typedef struct bus_cmd_item {
  const bus_cmd *cmd;
  const char *subject, *type;
  uint64_t prev;
  const void *data; /* NULL: {} */
  size_t len;
  int rc;       /* out: as bus_cmd_append's */
  uint64_t seq; /* out */
} bus_cmd_item;
int bus_cmd_append_many(bus_conn *c, bus_cmd_item *items, size_t n);

/*
 * Wait until v has applied everything stream held when this was called
 * (its last sequence, asked of the broker): a command checked against the
 * view after this sees every event stored before it came. For a view
 * fed the whole stream (a filtered one may never reach its last
 * sequence). As bus_view_wait_applied; the broker's errors as
 * bus_stream_last_seq.
 */
int bus_view_catch_up(bus_conn *c, bus_view *v, const char *stream,
                      int timeout_ms);

/* ------------------------------------------------------- verbs of a service */

/*
 * A service declares its verbs in one table and serves them with one call.
 * Flags, checked before the handler runs:
 *   BUS_VERB_ADMIN     only user admin: others get DENIED "only admin may
 *                      <verb>"
 *   BUS_VERB_CATCH_UP  first wait until the view has applied everything
 *                      the stream held when the command came
 *                      (bus_view_catch_up, up to wait_ms; past that the
 *                      handler runs anyway and apply refuses what slips by)
 *   BUS_VERB_SERIAL    one at a time with the other SERIAL verbs of its
 *                      kind (a check and its append are not interleaved
 *                      with another's)
 * A handler replies itself (bus_cmd_reply_ok or _error) and returns 0 or
 * the error it replied; a query entry is answered from the view by
 * bus_query_answer. Entries are matched in order; kind NULL matches every
 * kind served, verb NULL every verb (a fallback, put last).
 */
enum { BUS_VERB_ADMIN = 1, BUS_VERB_CATCH_UP = 2, BUS_VERB_SERIAL = 4 };

typedef int (*bus_verb_fn)(bus_conn *c, const bus_cmd *cmd, bus_view *v,
                           void *ud);
typedef int (*bus_query_fn)(bus_txn *t, const char *kind, const char *verb,
                            const msgpack_object *req, msgpack_packer *pk,
                            void *ud);

typedef struct bus_verb {
  const char *kind;   /* NULL: every kind of the table */
  const char *verb;   /* NULL: every verb */
  bus_verb_fn fn;     /* a command: replies itself */
  bus_query_fn query; /* or a read of the view */
  unsigned flags;     /* BUS_VERB_* */
} bus_verb;

typedef struct bus_verbs {
  const char *const *kinds; /* lark.cmd.*.<kind>.* served; NULL-terminated */
  const bus_verb *verbs;    /* ends with an entry with neither fn nor query */
  const char *unknown;      /* INVAL message for a verb not in the table */
  const char *stream;       /* CATCH_UP's stream; NULL: LARK_EVENTS */
  int wait_ms;              /* CATCH_UP's deadline; 0: 5000 */
  /* after each command (logging); rc as the handler's; may be NULL */
  void (*on_done)(const bus_cmd *cmd, int rc, void *ud);
} bus_verbs;

/* Run one parsed command through the table, in the calling thread. */
int bus_verbs_dispatch(const bus_verbs *t, bus_conn *c, bus_view *v, void *ud,
                       const bus_cmd *cmd);

/*
 * Serve the table's kinds (queue group lark-<kind>) with `workers`
 * threads of its own (0: 4). nats.c's delivery thread only queues a
 * request, so a command waiting for the view (CATCH_UP, or
 * bus_view_wait_applied in a handler) holds up no other command nor the
 * delivery of other messages. t, v and ud must outlive the server.
 * bus_cmd_server_stop ends the subscriptions, lets each worker finish the
 * command it holds, drops what is still queued (unanswered) and frees.
 */
typedef struct bus_cmd_server bus_cmd_server;
int bus_verbs_serve(bus_conn *c, const bus_verbs *t, bus_view *v, void *ud,
                    int workers, bus_cmd_server **out);
void bus_cmd_server_stop(bus_cmd_server *s);

/* ----------------------------------------------------------------- queries */

/*
 * A read of a view, answered the same way live (by the service, on
 * lark.cmd.<user>.<kind>.<verb>) and in the past (by larkctl, on a local
 * replay for --at). The function packs only the result value (an array
 * for "list", a map for "describe", ...) into pk and returns 0, or returns
 * an error code (BUS_ENOT_FOUND, BUS_EINVAL ...) with detail in
 * bus_last_error(); then nothing it packed is used. (bus_query_fn is
 * declared with the verbs above.)
 *
 * Run q in one read transaction of v and pack the whole reply into out:
 * {ok: true, result: <value>} or {error: {code, message, details: []}}.
 */
void bus_query_answer(bus_view *v, bus_query_fn q, const char *kind,
                      const char *verb, const msgpack_object *req,
                      msgpack_sbuffer *out, void *ud);

/*
 * The array a "list" answers: the rows of table whose key starts with
 * prefix (plen 0: all), in key order, each packed into pk by `each`, which
 * returns 1 when it packed one item, 0 to pass the row over, or an error
 * (< 0) to stop. limit 0: every row. On error out is left as it was.
 */
typedef int (*bus_list_cb)(const void *key, size_t klen, const void *val,
                           size_t vlen, msgpack_packer *pk, void *ud);
int bus_txn_list(bus_txn *t, const char *table, const void *prefix, size_t plen,
                 size_t limit, bus_list_cb each, void *ud, msgpack_packer *out);

/* ------------------------------------------------------------------- nkeys */

/*
 * NATS nkeys (Ed25519): a user seed "SU..." and public key "U...".
 * bus_nkey_create makes a fresh pair; bus_nkey_public derives the public
 * key from a seed. Seeds are secrets: wipe buffers with sodium_memzero.
 */
#define BUS_NKEY_SEED_LEN 58
#define BUS_NKEY_PUB_LEN 56
int bus_nkey_create(char seed[BUS_NKEY_SEED_LEN + 1],
                    char pub[BUS_NKEY_PUB_LEN + 1]);
int bus_nkey_public(const char *seed, char pub[BUS_NKEY_PUB_LEN + 1]);
/* Write a creds file (mode 0600) holding seed. */
int bus_nkey_write(const char *path, const char *seed);

#ifdef __cplusplus
}
#endif
#endif /* LARK_BUS_H */
