/* symbudget.c: the program's one budget for symbol data (symbudget.h). */
#include <pthread.h>
#include <string.h>

#include "symbudget.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct symbudget_stats st;

void symbudget__set(uint64_t max_bytes)
{
	pthread_mutex_lock(&lock);
	st.max = max_bytes;
	pthread_mutex_unlock(&lock);
}

bool symbudget__take(enum symbudget_kind k, uint64_t bytes)
{
	bool ok;

	pthread_mutex_lock(&lock);
	ok = !st.max || (st.used <= st.max && bytes <= st.max - st.used);
	if (ok) {
		st.used += bytes;
		st.used_by[k] += bytes;
	} else {
		st.refused_by[k]++;
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

void symbudget__force(enum symbudget_kind k, uint64_t bytes)
{
	pthread_mutex_lock(&lock);
	st.used += bytes;
	st.used_by[k] += bytes;
	pthread_mutex_unlock(&lock);
}

int symbudget__fits(uint64_t bytes)
{
	int r;

	pthread_mutex_lock(&lock);
	r = !st.max || (st.used <= st.max && bytes <= st.max - st.used) ? 1 : bytes > st.max ? 0 : -1;
	pthread_mutex_unlock(&lock);
	return r;
}

void symbudget__give(enum symbudget_kind k, uint64_t bytes)
{
	pthread_mutex_lock(&lock);
	if (bytes > st.used_by[k])
		bytes = st.used_by[k];	/* never below zero, whatever a holder believes */
	st.used_by[k] -= bytes;
	st.used -= bytes;
	pthread_mutex_unlock(&lock);
}

void symbudget__stats(struct symbudget_stats *out)
{
	pthread_mutex_lock(&lock);
	*out = st;
	pthread_mutex_unlock(&lock);
}

const char *symbudget__kind_name(enum symbudget_kind k)
{
	static const char *const names[SB__MAX] = { "perf_maps", "elf", "ready_to_run" };

	return k < SB__MAX ? names[k] : "?";
}
