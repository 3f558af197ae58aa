/* engine_fx.h: the engine with its BPF session faked (engine_fx.c: the ring buffer is a queue of
 * sample records the test writes; process events unavailable unless asked for), for test_engine.c,
 * test_report.c, test_record.c and test_agent.c. Samples of this process go from a record to a
 * window to a profile. */
#ifndef SPANPROF_ENGINE_FX_H
#define SPANPROF_ENGINE_FX_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "bpfsession.h"
#include "engine.h"
#include "profile.h"

struct fx {
	struct engine *e;
	struct engine_opts o;
	char state[PATH_MAX];
};

/* The fake sampler's counters, as bpfsession__counters gives them (zeroed by setup). */
extern uint64_t fake_counters[SP_CNT__MAX];
/* What the front-end asked of the fake session: the options of its last bpfsession__check or
 * __open, how many of each; what they return (0: go on; else the exit code, open failing). */
extern struct bpfsession_opts fake_opts;
extern int fake_checks, fake_opens, fake_check_rc, fake_open_rc;
/* Called at each drain of the fake ring (each poll, and the engine's stop), e.g. to queue. */
extern void (*fake_on_drain)(void);
/* The sampling as bpfsession__pause left it (1: paused), and what the next pause returns. */
extern int fake_paused, fake_pause_rc;
/* 1: process events are available (set before engine__open); queue_event queues one of this
 * tgid (at this time; this process's start ticks, or 1 for another) that the next poll hands to
 * the engine first. */
extern int fake_events;
void queue_event(uint32_t type, uint32_t tgid, const char *comm);
/* All of the above back to zero (setup does it). */
void fake_reset(void);
/* A function of this program for user frames to land in. */
int test_engine_marked_function(int x);
/* A record of this process (tid: this thread) with n user frames, queued in the fake ring, its
 * last cut bytes left out. */
void queue_sample(const uint64_t *user, uint16_t n, size_t cut);
/* A state directory of its own, an engine on this process (-p), attached (struct fx in *state). */
int setup(void **state);
int teardown(void **state);
/* The queued records taken (asserts: received of them), then the one window so far built into
 * one profile; the counters. */
struct profile *build(struct fx *f, uint64_t received, struct engine_counters *c);

#endif
