/*
 * engine_sim.h - lark-engine's view driven without a broker: events fed
 * in stream order (prev = the subject's version, as a writer sees it), and
 * what decide emits landed as the broker would land it (an engine event
 * whose prev is still the subject's version is applied; one that is not
 * is dropped, as the broker's check refuses it). Projections are kept
 * per subject (latest wins). Every event fed or landed is logged so a
 * replay into a fresh view (no decide) can be compared by digest.
 */
#ifndef LARK_ENGINE_SIM_H
#define LARK_ENGINE_SIM_H

#include "bus.h"

#define ESIM_LOG_MAX 20000
#define ESIM_PROJ_MAX 256

typedef struct esim_ev {
  char subject[256], id[33];
  bus_type type;
  uint64_t prev, seq;
  msgpack_sbuffer data;
} esim_ev;

typedef struct esim_proj {
  char subject[256];
  msgpack_sbuffer data;
} esim_proj;

typedef struct esim {
  bus_view *v;
  char dir[256];
  uint64_t seq;
  unsigned char outkey[8];
  int has_outkey;
  esim_ev *log;
  size_t nlog;
  esim_proj proj[ESIM_PROJ_MAX];
  int nproj;
  /* called for each engine event landed, with its typed data */
  void (*on_event)(const bus_event *ev, void *ud);
  void *ud;
} esim;

void esim_open(esim *s, const char *tag);
void esim_close(esim *s);
/* Feed data (type's generated struct) on subject; its seq. */
uint64_t esim_feed(esim *s, const char *subject, bus_type type,
                   const void *data);
/* Land what decide emitted until nothing new comes. */
void esim_settle(esim *s);
/* The subject's version in the view. */
uint64_t esim_version(esim *s, const char *subject);
/* The latest projection on subject (NULL: none). */
const esim_proj *esim_proj_get(esim *s, const char *subject);
/* Replay the log into a fresh view: 1 when its digest equals s's. */
int esim_replay_same(esim *s);

#endif
