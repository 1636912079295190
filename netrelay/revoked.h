/*
 * revoked.h - the hub's revoked set (part of larkrelay): an sshwire_krl
 * filled from the KRL file an operator gives (the signer's revoked_keys,
 * or one ssh-keygen -k wrote) and from cert.revoked events.
 *
 * A set is not locked: share it between threads read-only, and swap it
 * whole to update it. Functions return 0 or a negative BUS_E* code, with
 * a reason in why (cap bytes) where one helps.
 */
#ifndef LARK_RELAY_REVOKED_H
#define LARK_RELAY_REVOKED_H

#include "bus.h"
#include "sshwire.h"

/*
 * Apply one cert.revoked event: an SSH serial (16 hex digits) is added;
 * an X.509 serial (32 digits) or another type is ignored (returns 0).
 * BUS_EFIELD for a serial that is not hex.
 */
int relay_revoked_apply(sshwire_krl *r, const bus_event *ev);
/*
 * A new set from a KRL file, what it revokes for certificates of ca_pk
 * (sshwire_krl_parse); an empty file is an empty set. BUS_EMALFORMED for
 * a KRL that does not parse; BUS_EFIELD for SHA-1 fingerprint or
 * signature sections, which are not supported: the caller keeps its
 * previous set rather than trust half a list.
 */
int relay_revoked_load_file(const char *path, const uint8_t ca_pk[32],
                            sshwire_krl **out, char *why, size_t cap);

#endif
