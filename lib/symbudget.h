/* symbudget.h: one memory budget for all the symbol data of the program: .NET code ranges from
 * perf maps, ELF symbol tables, ReadyToRun images (--max-symbol-mb). A holder takes bytes before
 * it keeps a table and gives them back when it frees it; past the budget, a take fails and the
 * holder drops what it would have kept (or evicts tables of its own first), counting why.
 * Thread-safe. */
#ifndef SPANPROF_SYMBUDGET_H
#define SPANPROF_SYMBUDGET_H

#include <stdbool.h>
#include <stdint.h>

enum symbudget_kind {
	SB_PERF_MAPS,	/* perf map / jitdump code ranges, their index and names */
	SB_ELF,		/* ELF symbol and string tables, .eh_frame function starts */
	SB_R2R,		/* ReadyToRun method tables */
	SB__MAX,
};

/* The budget in bytes (0: none, the default). Lowering it takes nothing back. */
void symbudget__set(uint64_t max_bytes);
/* Take bytes for kind k: true, or false (nothing taken, counted as refused) when they do not fit. */
bool symbudget__take(enum symbudget_kind k, uint64_t bytes);
/* Take bytes for k even past the budget (what is already held and cannot be dropped). */
void symbudget__force(enum symbudget_kind k, uint64_t bytes);
/* Whether bytes would fit: 1 now, -1 not now (more than is free: a holder may evict), 0 never
 * (more than the whole budget). */
int symbudget__fits(uint64_t bytes);
/* Give back bytes taken for k. */
void symbudget__give(enum symbudget_kind k, uint64_t bytes);

struct symbudget_stats {
	uint64_t max, used;
	uint64_t used_by[SB__MAX];
	uint64_t refused_by[SB__MAX];	/* takes that did not fit */
};
void symbudget__stats(struct symbudget_stats *out);
const char *symbudget__kind_name(enum symbudget_kind k);

#endif /* SPANPROF_SYMBUDGET_H */
