/* symsrv.c: a worker thread fetches debug files by build id (cache directory first, then each
 * symbol server in the debuginfod and SSQP layouts) with libcurl, checks them, keeps the cache
 * under its cap and hands the parsed symbols over. Nothing here runs on the sampling path but
 * table look-ups under a mutex. */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elfsym.h"
#include "symsrv.h"
#include "util.h"

#define MAX_ENTRIES	1024	/* distinct build ids remembered */
#define MAX_ID_HEX	128
#define MAX_CACHE_FILES	65536	/* looked at per eviction pass */
#define STALE_FETCH_S	3600	/* a temporary file this old was left by a spanprof that died */
#define DOWN_NS		(60 * 1000000000ull)	/* an unreachable server is left alone this long */

enum entry_state { E_QUEUED, E_FETCHING, E_READY, E_TAKEN, E_FAILED };

struct entry {
	char id[MAX_ID_HEX + 1];
	char name[64];
	enum entry_state state;
	struct elfsym *dbg;	/* E_READY */
	uint64_t failed_ns;	/* E_FAILED: when */
};

struct symsrv {
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* the worker: work or stop */
	pthread_cond_t done;	/* symsrv__wait: an entry left the pending states */
	pthread_t thread;
	int started;
	volatile int stop;
	char *urls[2 * SYMSRV_MAX_URLS];
	uint64_t down_until[2 * SYMSRV_MAX_URLS];	/* worker only: unreachable until then */
	int n_urls;
	char *dir;
	uint64_t cap;
	uint32_t timeout_ms, retry_ms;
	struct entry *e;
	size_t n;
	uint64_t gen;
	struct symsrv_stats st;
	char last_error[256];
};

/* ---- URLs ------------------------------------------------------------------------------------ */

int symsrv__url(const char *base, const char *build_id, int ssqp, char *out, size_t len)
{
	size_t bl = strlen(base), il = strlen(build_id);
	char id[2 * 20 + 1];
	int n;


	while (bl && base[bl - 1] == '/')
		bl--;
	if (!ssqp) {
		n = snprintf(out, len, "%.*s/buildid/%s/debuginfo", (int)bl, base, build_id);
	} else {
		/* SSQP keys are 20 bytes: shorter build ids (16-byte md5/uuid) are padded with zeros. */
		if (il > 40)
			return -ENAMETOOLONG;
		memcpy(id, build_id, il);
		memset(id + il, '0', 40 - il);
		id[40] = 0;
		n = snprintf(out, len, "%.*s/_.debug/elf-buildid-sym-%s/_.debug", (int)bl, base, id);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n < 2 || n > MAX_ID_HEX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

/* ---- the cache directory --------------------------------------------------------------------- */

struct cfile {
	char name[MAX_ID_HEX + 16];
	uint64_t size;
	struct timespec mtime;
};

static int by_mtime(const void *a, const void *b)
{
	const struct cfile *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return 0;
}

/* Least recently used first (a cache hit touches its file) until the directory fits the cap;
 * keep is never removed. */
static void evict(struct symsrv *s, const char *keep)
{
	struct cfile *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int dfd;

	d = opendir(s->dir);
	if (!d)
		return;
	dfd = dirfd(d);
	while ((de = readdir(d)) && n < MAX_CACHE_FILES) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, ".fetch-", 7) == 0 &&
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    st.st_mtime + STALE_FETCH_S < time(NULL)) {
			unlinkat(dfd, de->d_name, 0);
			continue;
		}
		if (l < 7 || l >= sizeof(v->name) || strcmp(de->d_name + l - 6, ".debug") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct cfile *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].size = st.st_size;
		v[n].mtime = st.st_mtim;
		total += st.st_size;
		n++;
	}
	if (total > s->cap) {
		qsort(v, n, sizeof(*v), by_mtime);
		for (size_t i = 0; i < n && total > s->cap; i++) {
			if (keep && strcmp(v[i].name, keep) == 0)
				continue;
			if (unlinkat(dfd, v[i].name, 0) == 0) {
				total -= v[i].size;
				pthread_mutex_lock(&s->mu);
				s->st.evicted++;
				pthread_mutex_unlock(&s->mu);
			}
		}
	}
	closedir(d);
	free(v);
}

/* The cached debug file of id, checked; touched so eviction sees it used. */
static struct elfsym *from_cache(struct symsrv *s, const struct entry *e)
{
	char name[MAX_ID_HEX + 16], path[4096];
	struct elfsym *dbg;
	int dfd, fd;

	snprintf(name, sizeof(name), "%s.debug", e->id);
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	dfd = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		close(dfd);
		return NULL;
	}
	futimens(fd, NULL);
	dbg = elfsym__open_debug(fd, e->id, path);
	if (!dbg) {
		unlinkat(dfd, name, 0);	/* not what its name says: fetched again */
		pthread_mutex_lock(&s->mu);
		s->st.invalid++;
		pthread_mutex_unlock(&s->mu);
	}
	close(dfd);
	return dbg;
}

/* ---- fetching -------------------------------------------------------------------------------- */

struct sink {
	struct symsrv *s;
	int fd;
	uint64_t size, max;
};

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
	struct sink *k = arg;
	size_t len = sz * n, done = 0;

	if (k->s->stop || k->size + len > k->max)
		return 0;	/* aborts the transfer */
	while (done < len) {
		ssize_t w = write(k->fd, p + done, len - done);

		if (w <= 0)
			return 0;
		done += w;
	}
	k->size += len;
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct symsrv *s = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return s->stop;
}

static void set_error(struct symsrv *s, const char *url, const char *what)
{
	size_t n = strlen(url);

	pthread_mutex_lock(&s->mu);
	/* The URL's end says most (the build id); errors are kept short. */
	if (n > 160)
		url += n - 160;
	memcpy(s->last_error, url, strlen(url));
	snprintf(s->last_error + strlen(url), sizeof(s->last_error) - strlen(url), ": %.80s", what);
	s->st.errors++;
	pthread_mutex_unlock(&s->mu);
}

enum got { GOT_FILE, GOT_NOT_FOUND, GOT_ERROR, GOT_UNREACHABLE };

/* GET url into fd (truncated first). */
static enum got get(struct symsrv *s, CURL *c, const char *url, int fd, uint64_t *size)
{
	struct sink k = { s, fd, 0, s->cap < ELFSYM_MAX_FILE ? s->cap : ELFSYM_MAX_FILE };
	char cerr[CURL_ERROR_SIZE] = "", what[64];
	long code = 0;
	CURLcode rc;

	if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET))
		return GOT_ERROR;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(s->timeout_ms < 10000 ? s->timeout_ms : 10000));
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);	/* msdl redirects to a blob store */
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)k.max);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "spanprof/" SPANPROF_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &k);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK) {
		set_error(s, url, cerr[0] ? cerr : curl_easy_strerror(rc));
		return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
		       rc == CURLE_OPERATION_TIMEDOUT ? GOT_UNREACHABLE : GOT_ERROR;
	}
	if (code == 404 || code == 410)
		return GOT_NOT_FOUND;
	if (code != 200) {
		snprintf(what, sizeof(what), "HTTP %ld", code);
		set_error(s, url, what);
		return GOT_ERROR;
	}
	*size = k.size;
	return GOT_FILE;
}

/* Every server, both layouts, until one gives a debug file of this build id. *not_found: every
 * answer was a 404. */
static struct elfsym *from_servers(struct symsrv *s, CURL *c, const struct entry *e,
				   int *not_found)
{
	char tmp[4096], final[4096], name[MAX_ID_HEX + 16], url[4096];
	struct elfsym *dbg = NULL;
	uint64_t size = 0;
	int fd;

	*not_found = 1;
	snprintf(tmp, sizeof(tmp), "%s/.fetch-%s-XXXXXX", s->dir, e->id);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		set_error(s, s->dir, strerror(errno));
		*not_found = 0;
		return NULL;
	}
	snprintf(name, sizeof(name), "%s.debug", e->id);
	snprintf(final, sizeof(final), "%s/%s", s->dir, name);
	for (int i = 0; i < s->n_urls && !dbg && !s->stop; i++) {
		if (now_ns() < s->down_until[i]) {
			*not_found = 0;	/* not asked: no answer either way */
			continue;
		}
		for (int ssqp = 0; ssqp < 2 && !dbg && !s->stop; ssqp++) {
			enum got g;

			if (symsrv__url(s->urls[i], e->id, ssqp, url, sizeof(url)))
				continue;
			g = get(s, c, url, fd, &size);
			if (g == GOT_NOT_FOUND)
				continue;
			*not_found = 0;
			if (g == GOT_UNREACHABLE) {
				/* Every build id would wait for the same timeout: not for a while. */
				s->down_until[i] = now_ns() + DOWN_NS;
				break;
			}
			if (g != GOT_FILE)
				continue;
			dbg = elfsym__open_debug(dup(fd), e->id, final);
			pthread_mutex_lock(&s->mu);
			s->st.bytes += size;
			if (!dbg)
				s->st.invalid++;
			pthread_mutex_unlock(&s->mu);
			if (!dbg)
				set_error(s, url, "not a debug file of this build id");
		}
	}
	close(fd);
	if (dbg && rename(tmp, final) == 0) {
		evict(s, name);
		return dbg;
	}
	unlink(tmp);
	return dbg;	/* usable even if it could not be kept */
}

static void *worker(void *arg)
{
	struct symsrv *s = arg;
	CURL *c = curl_easy_init();

	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		struct entry *e = NULL, copy;
		struct elfsym *dbg;
		int not_found = 0, hit = 0;

		for (size_t i = 0; i < s->n && !e; i++)
			if (s->e[i].state == E_QUEUED)
				e = &s->e[i];
		if (!e) {
			pthread_cond_wait(&s->wake, &s->mu);
			continue;
		}
		e->state = E_FETCHING;
		copy = *e;
		pthread_mutex_unlock(&s->mu);

		dbg = from_cache(s, &copy);
		hit = dbg != NULL;
		if (!dbg && c)
			dbg = from_servers(s, c, &copy, &not_found);

		pthread_mutex_lock(&s->mu);	/* e stays valid: the table never moves */
		if (dbg) {
			e->state = E_READY;
			e->dbg = dbg;
			*(hit ? &s->st.cache_hits : &s->st.fetched) += 1;
		} else {
			e->state = E_FAILED;
			e->failed_ns = now_ns();
			*(not_found ? &s->st.not_found : &s->st.failed) += 1;
		}
		s->st.pending--;
		s->gen++;
		pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->mu);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* ---- the interface --------------------------------------------------------------------------- */

static int add_url(struct symsrv *s, const char *u, size_t len)
{
	if (len == 0 || s->n_urls == (int)(sizeof(s->urls) / sizeof(s->urls[0])))
		return 0;
	for (int i = 0; i < s->n_urls; i++)
		if (strlen(s->urls[i]) == len && !strncmp(s->urls[i], u, len))
			return 0;
	if (!(s->urls[s->n_urls] = strndup(u, len)))
		return -ENOMEM;
	s->n_urls++;
	return 0;
}

static int mkdirs(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

struct symsrv *symsrv__new(const struct symsrv_opts *o, char *err, size_t errlen)
{
	const char *env = getenv("DEBUGINFOD_URLS");
	struct symsrv *s = calloc(1, sizeof(*s));
	int rc = 0;

	err[0] = 0;
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->done, NULL);
	for (int i = 0; i < o->n_urls && !rc; i++)
		rc = add_url(s, o->urls[i], strlen(o->urls[i]));
	while (env && *env && !rc) {	/* space-separated */
		size_t l = strcspn(env, " \t");

		rc = add_url(s, env, l);
		env += l;
		env += strspn(env, " \t");
	}
	if (rc)
		goto err_free;
	if (!s->n_urls) {
		rc = -ENODATA;
		goto err_free;
	}
	s->dir = strdup(o->cache_dir ? o->cache_dir : SYMSRV_CACHE_DIR);
	s->e = calloc(MAX_ENTRIES, sizeof(*s->e));
	if (!s->dir || !s->e) {
		rc = -ENOMEM;
		goto err_free;
	}
	s->cap = o->cache_max_bytes ? o->cache_max_bytes : (uint64_t)SYMSRV_CACHE_MB << 20;
	s->timeout_ms = o->timeout_ms ? o->timeout_ms : SYMSRV_TIMEOUT_MS;
	s->retry_ms = o->retry_ms ? o->retry_ms : SYMSRV_RETRY_MS;
	s->st.n_urls = s->n_urls;
	if ((rc = mkdirs(s->dir))) {
		snprintf(err, errlen, "cannot make the symbol cache %s: %s", s->dir, strerror(-rc));
		goto err_free;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if ((rc = -pthread_create(&s->thread, NULL, worker, s)))
		goto err_free;
	s->started = 1;
	return s;

err_free:
	symsrv__free(s);
	errno = -rc;
	return NULL;
}

void symsrv__free(struct symsrv *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->thread, NULL);
	for (size_t i = 0; s->e && i < s->n; i++)
		elfsym__free(s->e[i].dbg);
	for (int i = 0; i < s->n_urls; i++)
		free(s->urls[i]);
	free(s->e);
	free(s->dir);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

enum symsrv_state symsrv__want(struct symsrv *s, const char *build_id, const char *name)
{
	enum symsrv_state r = SYMSRV_PENDING;
	struct entry *e = NULL;

	if (!s || !build_id || !valid_id(build_id))
		return SYMSRV_FAILED;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n && !e; i++)
		if (strcmp(s->e[i].id, build_id) == 0)
			e = &s->e[i];
	if (!e) {
		if (s->n == MAX_ENTRIES) {
			s->st.dropped++;
			r = SYMSRV_FAILED;
			goto unlock;
		}
		e = &s->e[s->n++];
		snprintf(e->id, sizeof(e->id), "%s", build_id);
		snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
		e->state = E_QUEUED;
		s->st.requested++;
		s->st.pending++;
		pthread_cond_signal(&s->wake);
	} else if ((e->state == E_FAILED && now_ns() - e->failed_ns >= s->retry_ms * 1000000ull) ||
		   e->state == E_TAKEN) {
		/* The negative entry expired: once more. Taken: another file with the same build id
		 * (another container's copy) wants its own, which the cache gives. */
		e->state = E_QUEUED;
		s->st.pending++;
		pthread_cond_signal(&s->wake);
	}
	switch (e->state) {
	case E_READY: r = SYMSRV_READY; break;
	case E_FAILED: r = SYMSRV_FAILED; break;
	default: r = SYMSRV_PENDING; break;
	}
unlock:
	pthread_mutex_unlock(&s->mu);
	return r;
}

struct elfsym *symsrv__take(struct symsrv *s, const char *build_id)
{
	struct elfsym *dbg = NULL;

	if (!s || !build_id)
		return NULL;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].state == E_READY && strcmp(s->e[i].id, build_id) == 0) {
			dbg = s->e[i].dbg;
			s->e[i].dbg = NULL;
			s->e[i].state = E_TAKEN;
			break;
		}
	pthread_mutex_unlock(&s->mu);
	return dbg;
}

uint64_t symsrv__generation(const struct symsrv *s)
{
	uint64_t g;

	if (!s)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&s->mu);
	g = s->gen;
	pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
	return g;
}

uint64_t symsrv__wait(struct symsrv *s, uint32_t timeout_ms)
{
	struct timespec until;
	uint64_t left;

	if (!s)
		return 0;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->mu);
	while (s->st.pending && pthread_cond_timedwait(&s->done, &s->mu, &until) == 0)
		;
	left = s->st.pending;
	pthread_mutex_unlock(&s->mu);
	return left;
}

void symsrv__stats(const struct symsrv *s, struct symsrv_stats *out)
{
	if (!s) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock((pthread_mutex_t *)&s->mu);
	*out = s->st;
	pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
}

void symsrv__last_error(const struct symsrv *s, char *buf, size_t len)
{
	pthread_mutex_lock((pthread_mutex_t *)&s->mu);
	snprintf(buf, len, "%s", s->last_error);
	pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
}
