/* symsrv.h: debug files by build id from symbol servers (debuginfod and SSQP), fetched by a
 * worker thread into a size-capped cache directory; the sampling path only asks and takes. */
#ifndef SPANPROF_SYMSRV_H
#define SPANPROF_SYMSRV_H

#include <stdint.h>

struct elfsym;

#define SYMSRV_MAX_URLS		8
#define SYMSRV_CACHE_DIR	"/var/cache/spanprof/debug"
#define SYMSRV_CACHE_MB		2048	/* default cap of the cache directory */
#define SYMSRV_TIMEOUT_MS	60000	/* default bound of one request, connect to last byte */
#define SYMSRV_RETRY_MS		(10 * 60 * 1000)	/* a build id no server gave is asked again after */

/* The command line's view (record and agent parse the same flags into it). */
struct symsrv_opts {
	const char *urls[SYMSRV_MAX_URLS];	/* --symbol-server, repeatable */
	int n_urls;
	const char *cache_dir;		/* --symbol-cache; NULL: SYMSRV_CACHE_DIR */
	uint64_t cache_max_bytes;	/* --symbol-cache-mb; 0: SYMSRV_CACHE_MB */
	uint32_t timeout_ms;		/* 0: SYMSRV_TIMEOUT_MS */
	uint32_t retry_ms;		/* 0: SYMSRV_RETRY_MS */
};

struct symsrv_stats {
	uint64_t requested;	/* distinct build ids asked for */
	uint64_t cache_hits;	/* found in the cache directory */
	uint64_t fetched;	/* downloaded and checked */
	uint64_t not_found;	/* build ids no server had (404 everywhere) */
	uint64_t failed;	/* build ids given up on after an error (connect, timeout, 5xx), or not
				 * asked: every server was found unreachable in the last minute */
	uint64_t invalid;	/* files refused: not ELF, no .symtab, another build id, too large */
	uint64_t errors;	/* failed requests (one build id can cost several) */
	uint64_t evicted;	/* cache files removed to stay under the cap */
	uint64_t dropped;	/* requests past the table's size */
	uint64_t bytes;		/* bytes downloaded */
	uint64_t pending;	/* queued or in flight now */
	int n_urls;		/* servers in use (flags and $DEBUGINFOD_URLS) */
};

struct symsrv;

/* Servers from o and $DEBUGINFOD_URLS (space-separated, as debuginfod clients read it); each is
 * asked in the debuginfod layout (URL/buildid/<id>/debuginfo), then the SSQP one Microsoft's
 * server uses (URL/_.debug/elf-buildid-sym-<id>/_.debug). Creates the cache directory (0700)
 * and starts the worker. NULL and errno: ENODATA no server at all, else a one-line reason in
 * err (the cache directory cannot be made). Every string is copied. */
struct symsrv *symsrv__new(const struct symsrv_opts *o, char *err, size_t errlen);

/* Stops the worker (a request in flight is aborted) and frees. NULL-safe. */
void symsrv__free(struct symsrv *s);

enum symsrv_state {
	SYMSRV_PENDING,		/* queued or in flight: ask again later */
	SYMSRV_READY,		/* symsrv__take gives it */
	SYMSRV_FAILED,		/* none to be had (for now; asked again after retry_ms) */
};

/* The debug file of build_id (lowercase hex) for a file called name (for messages): queued when
 * new, when its failure is older than retry_ms, and when it was taken already (a second file with
 * that build id: the cache gives it again). Never blocks on I/O. */
enum symsrv_state symsrv__want(struct symsrv *s, const char *build_id, const char *name);

/* The debug symbols of a READY build id, once: the caller owns them. NULL otherwise. */
struct elfsym *symsrv__take(struct symsrv *s, const char *build_id);

/* Changes each time a build id becomes READY or FAILED: nothing to look at while it stays. */
uint64_t symsrv__generation(const struct symsrv *s);

/* Waits until nothing is pending or timeout_ms passed. Returns what is still pending. */
uint64_t symsrv__wait(struct symsrv *s, uint32_t timeout_ms);

void symsrv__stats(const struct symsrv *s, struct symsrv_stats *out);
/* The last failed request ("http://...: HTTP 500", "...: Timeout was reached"), "" if none. */
void symsrv__last_error(const struct symsrv *s, char *buf, size_t len);

/* The request paths of build_id under a server URL, for both layouts (tests, messages): 0, or
 * -ENAMETOOLONG. */
int symsrv__url(const char *base, const char *build_id, int ssqp, char *out, size_t len);

#endif /* SPANPROF_SYMSRV_H */
