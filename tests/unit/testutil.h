/* testutil.h: the unit tests' shared setup helpers (temp dirs and files, fake /proc trees and
 * container roots, child processes, fixture programs and tools, span records). Linked into every
 * tests/unit/test_*.c; needs only libc, zlib and cmocka. Helpers that fail the current test on a
 * setup error say so ("asserts"); the others return an error for a setup function to pass on. */
#ifndef SPANPROF_TESTUTIL_H
#define SPANPROF_TESTUTIL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- temp dirs and files ------------------------------------------------------------------- */

/* Makes the directory /tmp/<test program>.XXXXXX, its name into out; out, or NULL if it failed. */
char *testutil__mkdtemp(char *out, size_t size);
/* Makes and opens the file /tmp/<test program>.XXXXXX, its name into out; the fd, or -1. */
int testutil__mkstemp(char *out, size_t size);
/* A temp file (as testutil__mkstemp, closed again) holding len bytes of data; 0, or -1. */
int testutil__temp_file(char *out, size_t size, const void *data, size_t len);
/* Removes path and everything below it, symlinks not followed (rm -rf); 0, or -1. */
int testutil__rm_rf(const char *path);
/* Removes everything inside dir, hidden entries too, keeping dir itself; 0, or -1. */
int testutil__empty_dir(const char *dir);
/* How many entries dir holds: every one but . and .. (hidden ones, temporary files, too) when
 * suffix is NULL, else the visible ones whose names end in suffix. Asserts dir opens. */
int testutil__entries(const char *dir, const char *suffix);

/* dir/rel into out (rel alone when dir is NULL); asserts it fits. Returns out. */
char *testutil__path(char *out, size_t size, const char *dir, const char *rel);
/* Makes dir/rel and its missing parents (mkdir -p); asserts. */
void testutil__mkdirs(const char *dir, const char *rel);
/* Writes len bytes of data to dir/rel (rel alone when dir is NULL), truncating it; asserts. */
void testutil__write(const char *dir, const char *rel, const void *data, size_t len);
/* Writes the string text to dir/name (name alone when dir is NULL); asserts. */
void testutil__write_file(const char *dir, const char *name, const char *text);
/* File path whole, malloc'd, NUL-terminated, its length into *len (if len); NULL if unopenable. */
char *testutil__slurp(const char *path, size_t *len);
/* How many lines (newlines) s holds. */
int testutil__lines(const char *s);
/* 1 if the printf-formatted path exists (lstat: a dangling symlink exists), else 0. */
int testutil__exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One read(2) of fd into buf, NUL-terminated (at most size - 1 bytes); asserts it did not fail. */
void testutil__read_fd(int fd, char *buf, size_t size);
/* A shared mapping of a new len-byte memfd called name, its fd into *fd (or closed). Asserts. */
void *testutil__memfd_map(const char *name, size_t len, int *fd);

/* ---- fake trees ---------------------------------------------------------------------------- */

/* Makes the fake /proc/<pid> dir <proc_root>/<pid> (pid "4242" or any name); out. Asserts. */
char *testutil__proc_dir(char *out, size_t size, const char *proc_root, const char *pid);
/* Writes text to the fake /proc/<pid>/<name> (stat, status, maps, cgroup...); asserts. */
void testutil__proc_file(const char *proc_root, const char *pid, const char *name,
			 const char *text);

/* A temp directory playing a container's root, opened O_PATH at root_fd:
 *   <root>/tmp/perf-7.map        regular file "inside\n"
 *   <root>/tmp/jit-7.dump        symlink -> /etc/hostname (a host file)
 *   <root>/tmp/perf-8.map        symlink -> perf-7.map (relative, still refused)
 *   <root>/tmp/fifo              FIFO without a writer
 *   <root>/tmp/sub/perf-9.map    regular file "sub\n"
 *   <root>/link -> tmp           symlinked directory
 *   <root>/etc/hostname          the root's own hostname file "container\n"
 */
struct testutil_root {
	char root[PATH_MAX];
	int root_fd;
};

/* cmocka setup: *state = a new struct testutil_root, the tree above made. Asserts. */
int testutil__root_setup(void **state);
/* cmocka teardown of testutil__root_setup: closes root_fd, removes the tree. Asserts. */
int testutil__root_teardown(void **state);

/* ---- child processes ----------------------------------------------------------------------- */

/* Starts /bin/sleep 5 with environment envp; its pid, once /proc shows the new environ. Asserts. */
pid_t testutil__spawn_env(char *const envp[]);
/* Forks a copy of this process that waits in pause() until it is killed; its pid. Asserts. */
pid_t testutil__fork_paused(void);
/* The start time of process pid, field 22 of /proc/<pid>/stat (clock ticks). Asserts. */
uint64_t testutil__start_ticks(pid_t pid);
/* Kills pid (SIGKILL) and waits for it; waitpid's result (pid, or -1). */
pid_t testutil__reap(pid_t pid);
/* Waits for the child pid, asserting it was waited for; its wait status. */
int testutil__wait(pid_t pid);

/* ---- fixture programs and tools ------------------------------------------------------------ */

/* Runs the printf-formatted shell command; system()'s status, the command printed if not 0. */
int testutil__run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Builds src into out with the system compiler: cc <flags> -o 'out' 'src'; as testutil__run. */
int testutil__cc(const char *flags, const char *out, const char *src);
/* <source tree>/rel into out ($SPANPROF_SRCDIR, $SPANPROF_SRC, or found); 0, or -1 (said). */
int testutil__src_path(char *out, size_t size, const char *rel);
/* The build id of the ELF file path as readelf prints it, into out ("" when none). Asserts. */
void testutil__build_id(const char *path, char *out, size_t size);
/* The gunzipped bytes of gz (one gzip member, nothing after it), malloc'd, *out_len. Asserts. */
uint8_t *testutil__gunzip(const void *gz, size_t len, size_t *out_len);
/* CLOCK_MONOTONIC in milliseconds. */
double testutil__now_ms(void);

/* ---- span context records (OTEP 4947: 28-byte head, then {key u8, len u8, bytes}...) -------- */

struct testutil_rec {
	uint8_t b[1024];
	size_t len;
};

/* Starts a record: ids (NULL: zero), valid flag, trace flags 1, no attributes. */
void testutil__rec_start(struct testutil_rec *r, const uint8_t *trace, const uint8_t *span,
			 uint8_t valid);
/* Appends attribute key with the n bytes of val; the head's attrs_data_size follows. */
void testutil__rec_attr(struct testutil_rec *r, uint8_t key, const char *val, size_t n);
/* Appends attribute key with the string val, as testutil__rec_attr. */
void testutil__rec_str(struct testutil_rec *r, uint8_t key, const char *val);
/* Sets attrs_data_size to all bytes after the head (after bytes appended by hand). */
void testutil__rec_end(struct testutil_rec *r);
/* A span table's key names, {u8 len, bytes}... into buf; the bytes written. */
size_t testutil__key_table(uint8_t *buf, const char *const *names, size_t n);

#endif
