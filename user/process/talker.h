/* talker.h: talks to processes (a diagnostics socket that may never answer) on worker threads,
 * so that the sampling loop never waits on them. A talk is a function run once on a worker; the
 * loop polls for its end and takes its result. Thread-safe. */
#ifndef SPANPROF_TALKER_H
#define SPANPROF_TALKER_H

#include <stdint.h>

#define TALK_WORKERS 4	/* talks that run at once; more wait their turn, in order */

struct talk;

/* Run fn(arg) on a worker (fn leaves what it learns in arg). arg stays the worker's until the talk
 * is taken back (talk__finish) or, abandoned, freed with free_arg (may be NULL) once it ends.
 * NULL and errno (ENOMEM, or the error starting a worker). */
struct talk *talk__start(int (*fn)(void *arg), void *arg, void (*free_arg)(void *arg));
/* 1 when the talk has ended (*result: what fn returned), 0 while it is queued or running. */
int talk__poll(struct talk *t, int *result);
/* Take the talk back and free it (arg is the caller's again, not freed): one still queued is
 * cancelled (fn never ran; returns 0); one running is waited for (returns 1, *result set); one
 * ended returns 1 at once. */
int talk__finish(struct talk *t, int *result);
/* Leave the talk: it and its arg (free_arg) are freed when it ends (at once if not started). */
void talk__abandon(struct talk *t);

struct talk_stats {
	uint64_t started, ended, cancelled, abandoned;
	uint32_t running, queued;	/* now */
};
void talk__stats(struct talk_stats *out);

#endif /* SPANPROF_TALKER_H */
