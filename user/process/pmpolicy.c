/* pmpolicy.c: when a process's perf maps are started afresh, turned off or on again (pmpolicy.h). */
#include "pmpolicy.h"

enum pmpolicy_action pmpolicy__decide(const struct pmpolicy_cfg *c, const struct pmpolicy_proc *s,
				      uint64_t now_ns)
{
	int past_cap = c->max_bytes && s->bytes > c->max_bytes;

	if (s->busy)
		return PMPOLICY_NONE;
	if (s->off_idle)
		return s->last_sample_ns > s->off_ns ? PMPOLICY_ON : PMPOLICY_NONE;
	if (!s->ours)
		return past_cap && !s->warned ? PMPOLICY_WARN : PMPOLICY_NONE;
	if (c->idle_ns && s->last_sample_ns && now_ns >= s->last_sample_ns + c->idle_ns)
		return PMPOLICY_OFF;
	if (past_cap && s->bytes >= 2 * s->base_bytes)
		return PMPOLICY_RESTART;
	return PMPOLICY_NONE;
}

const char *pmpolicy__action_name(enum pmpolicy_action a)
{
	switch (a) {
	case PMPOLICY_NONE: return "none";
	case PMPOLICY_RESTART: return "restart";
	case PMPOLICY_OFF: return "off";
	case PMPOLICY_ON: return "on";
	case PMPOLICY_WARN: return "warn";
	}
	return "?";
}
