/*
 * commands.c - the catalog's verbs: its two reads, list and describe,
 * answered from the view (catalog_query, queries.c). The catalog takes no
 * commands of its own: it only observes.
 */
#include <stddef.h>

#include "catalog.h"

static const char *const kinds[] = {"catalog", NULL};

static const bus_verb verbs[] = {
    {"catalog", "list", NULL, catalog_query, 0},
    {"catalog", "describe", NULL, catalog_query, 0},
    /* any other verb: catalog_query answers with the verbs it knows */
    {"catalog", NULL, NULL, catalog_query, 0},
    {0},
};

const bus_verbs catalog_verbs = {.kinds = kinds, .verbs = verbs};
