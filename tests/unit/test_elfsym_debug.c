/* test_elfsym_debug.c: debug files for elfsym: .gnu_debuglink, build-id directories, the
 * host fallback for a container's binary, and debug files attached by build id (fixtures: elfsym_fx.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <sys/resource.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elfsym.h"
#include "rootfs.h"
#include "testutil.h"

#include "elfsym_fx.h"

/* ---- debug files --------------------------------------------------------------------------- */

/* fx_dl.so (no .symtab) must get fx_lib_hidden from its debuglink file. */
static void check_debuglink_in(const char *subdir, const char *debug_src, int expect_found)
{
	char dir[PATH_MAX], so[PATH_MAX + 16], full[PATH_MAX];
	struct elfsym *es, *ref;
	struct elfsym_stats st;
	const char *got;
	uint64_t off;
	void *h, *(*hidden_addr)(void);
	uint64_t vaddr_hidden;

	snprintf(dir, sizeof(dir), "%s/dl_%s", fx_tmpdir, subdir[0] ? subdir + 1 : "same");
	assert_int_equal(testutil__run("rm -rf %s && mkdir -p %s%s && cp %s/fx_dl.so %s/ && cp %s/%s %s%s/fx_dl.so.debug",
			     dir, dir, subdir, fx_tmpdir, dir, fx_tmpdir, debug_src, dir, subdir), 0);
	snprintf(so, sizeof(so), "%s/fx_dl.so", dir);

	/* Ground truth for the local's address: the unstripped build's own .symtab, via dlopen. */
	fx_path(full, sizeof(full), "fx_dl_full.so");
	h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	hidden_addr = (void *(*)(void))dlsym(h, "fx_lib_hidden_addr");
	assert_non_null(hidden_addr);
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)hidden_addr(), full, &off), 0);
	ref = open_fx("fx_dl_full.so");
	assert_int_equal(elfsym__file_to_vaddr(ref, off, &vaddr_hidden), 0);
	elfsym__free(ref);
	dlclose(h);

	es = elfsym__open(AT_FDCWD, so);
	assert_non_null(es);
	elfsym__stats(es, &st);
	got = elfsym__lookup(es, off, NULL);
	if (expect_found) {
		char want[PATH_MAX + 64];

		snprintf(want, sizeof(want), "%s%s/fx_dl.so.debug", dir, subdir);
		assert_non_null(elfsym__debug_file(es));
		assert_string_equal(elfsym__debug_file(es), want);
		assert_true(st.symtab > 0);
		assert_non_null(got);
		assert_string_equal(got, "fx_lib_hidden");
		assert_string_equal(elfsym__lookup_vaddr(es, vaddr_hidden, NULL), "fx_lib_hidden");
	} else {
		assert_null(elfsym__debug_file(es));
		assert_true(st.debug_rejected > 0);
		assert_int_equal(st.symtab, 0);
		assert_null(got);
	}
	/* Exported names come from .dynsym either way. */
	assert_true(st.dynsym > 0);
	elfsym__free(es);
}

static void test_elfsym_debuglink_same_dir(void **state)
{
	(void)state;
	check_debuglink_in("", "fx_dl.so.debug", 1);
}

static void test_elfsym_debuglink_debug_subdir(void **state)
{
	(void)state;
	check_debuglink_in("/.debug", "fx_dl.so.debug", 1);
}

static void test_elfsym_debuglink_crc_mismatch(void **state)
{
	char bad[PATH_MAX];

	(void)state;
	/* Same name, one byte appended: the CRC no longer matches the link. */
	fx_path(bad, sizeof(bad), "fx_dl_bad.debug");
	assert_int_equal(testutil__run("cp %s/fx_dl.so.debug %s && printf x >> %s", fx_tmpdir, bad, bad), 0);
	check_debuglink_in("", "fx_dl_bad.debug", 0);
}

/* A fake root holding fx_bid.so and a debug file under usr/lib/debug/.build-id. */
static int make_bid_root(char *root, size_t size, const char *debug_src)
{
	struct elfsym *es;
	char bid[256];

	es = open_fx("fx_bid.so");
	if (!es || !elfsym__build_id(es))
		return -1;
	snprintf(bid, sizeof(bid), "%s", elfsym__build_id(es));
	elfsym__free(es);
	snprintf(root, size, "%s/root_%s", fx_tmpdir, debug_src);
	return testutil__run("rm -rf %s && mkdir -p %s/usr/lib %s/usr/lib/debug/.build-id/%.2s && "
		   "cp %s/fx_bid.so %s/usr/lib/ && cp %s/%s %s/usr/lib/debug/.build-id/%.2s/%s.debug",
		   root, root, root, bid, fx_tmpdir, root, fx_tmpdir, debug_src, root, bid, bid + 2);
}

static void test_elfsym_build_id_debug_dir(void **state)
{
	char root[PATH_MAX], want[256];
	struct elfsym *es, *full;
	struct elfsym_stats st;
	uint64_t vaddr = 0;
	const char *got;
	int rfd;

	(void)state;
	assert_int_equal(make_bid_root(root, sizeof(root), "fx_bid.debug"), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, "/usr/lib/fx_bid.so");
	assert_non_null(es);
	snprintf(want, sizeof(want), "/usr/lib/debug/.build-id/%.2s/%s.debug", elfsym__build_id(es),
		 elfsym__build_id(es) + 2);
	assert_non_null(elfsym__debug_file(es));
	assert_string_equal(elfsym__debug_file(es), want);
	elfsym__stats(es, &st);
	assert_true(st.symtab > 0);

	/* The local's address from the unstripped build's own .symtab. */
	full = open_fx("fx_bid_full.so");
	assert_int_equal(elfsym__count(full), elfsym__count(es));
	for (vaddr = 0x1000; vaddr < 0x2000; vaddr++) {
		got = elfsym__lookup_vaddr(full, vaddr, NULL);
		if (got && strcmp(got, "fx_lib_hidden") == 0)
			break;
	}
	assert_true(vaddr < 0x2000);
	got = elfsym__lookup_vaddr(es, vaddr, NULL);
	assert_non_null(got);
	assert_string_equal(got, "fx_lib_hidden");
	elfsym__free(full);
	elfsym__free(es);
	close(rfd);
}

static void test_elfsym_build_id_mismatch(void **state)
{
	char root[PATH_MAX];
	struct elfsym_stats st;
	struct elfsym *es;
	int rfd;

	(void)state;
	/* Another build's debug file at this build id's path: refused. */
	assert_int_equal(make_bid_root(root, sizeof(root), "fx_other.debug"), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, "/usr/lib/fx_bid.so");
	assert_non_null(es);
	assert_null(elfsym__debug_file(es));
	elfsym__stats(es, &st);
	assert_true(st.debug_rejected > 0);
	assert_int_equal(st.symtab, 0);
	elfsym__free(es);
	close(rfd);
}

/* libc copied into a fake root: its debug file is found on the host instead. */
static void test_elfsym_debug_host_fallback(void **state)
{
	char root[PATH_MAX], bid[256], host_dbg[PATH_MAX];
	struct elfsym *es;
	int rfd;

	(void)state;
	testutil__build_id(LIBC_PATH, bid, sizeof(bid));
	snprintf(host_dbg, sizeof(host_dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (!bid[0] || access(host_dbg, R_OK) != 0) {
		print_message("skipped: no host debug file for libc (%s)\n", host_dbg);
		skip();
	}
	snprintf(root, sizeof(root), "%s/root_libc", fx_tmpdir);
	assert_int_equal(testutil__run("mkdir -p %s/lib && cp %s %s/lib/libc.so.6", root, LIBC_PATH, root), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, "/lib/libc.so.6");
	assert_non_null(es);
	assert_non_null(elfsym__debug_file(es));
	assert_string_equal(elfsym__debug_file(es), host_dbg);
	elfsym__free(es);
	close(rfd);
}


/* A container's binary (no build id) whose .gnu_debuglink names a file that exists only on the
 * host, at the path the binary has inside its root: never used, the refusal counted and named. */
static void test_elfsym_debuglink_outside_root_refused(void **state)
{
	char root[PATH_MAX], dir[PATH_MAX], so[PATH_MAX + 16], host_dbg[PATH_MAX + 32];
	struct elfsym_stats st;
	struct elfsym *es;
	uint64_t v, size;
	int rfd;

	(void)state;
	snprintf(root, sizeof(root), "%s/root_dl", fx_tmpdir);
	snprintf(dir, sizeof(dir), "%s/dl_hostonly", fx_tmpdir);	/* the same path inside and out */
	assert_int_equal(testutil__run("rm -rf %s %s && mkdir -p %s%s %s && cp %s/fx_dl.so %s%s/ && "
				       "cp %s/fx_dl.so.debug %s/fx_dl.so %s/", root, dir, root, dir, dir, fx_tmpdir,
				       root, dir, fx_tmpdir, fx_tmpdir, dir), 0);
	snprintf(so, sizeof(so), "%s/fx_dl.so", dir);
	snprintf(host_dbg, sizeof(host_dbg), "%s/fx_dl.so.debug", dir);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, so);
	if (!es)
		fail_msg("elfsym__open(%s in %s): %s", so, root, strerror(errno));
	elfsym__stats(es, &st);
	if (elfsym__debug_file(es))
		fail_msg("used the host's %s for a binary inside a root", elfsym__debug_file(es));
	assert_int_equal(st.symtab, 0);
	assert_true(st.debug_outside_refused >= 1);
	assert_non_null(elfsym__debug_refused(es));
	assert_string_equal(elfsym__debug_refused(es), host_dbg);
	nm_size("fx_dl_full.so", "fx_lib_hidden", &v, &size);
	assert_null(elfsym__lookup_vaddr(es, v, NULL));
	elfsym__free(es);

	/* The same file opened as a host file (the root is /) still finds it. */
	es = elfsym__open(AT_FDCWD, so);
	assert_non_null(es);
	assert_non_null(elfsym__debug_file(es));
	assert_string_equal(elfsym__lookup_vaddr(es, v, NULL), "fx_lib_hidden");
	elfsym__free(es);
	close(rfd);
}

/* A debug file from elsewhere (a cache, a symbol server) is attached by build id only. */
static void test_elfsym_attach_debug(void **state)
{
	char path[PATH_MAX];
	struct elfsym *es, *dbg;
	uint64_t v, size;

	(void)state;
	nm_size("fx_bid_full.so", "fx_lib_hidden", &v, &size);
	es = open_fx("fx_bid.so");
	assert_true(elfsym__needs_debug(es));
	assert_null(elfsym__lookup_vaddr(es, v, NULL));

	fx_path(path, sizeof(path), "fx_other.debug");
	dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), elfsym__build_id(es), path);
	assert_null(dbg);
	assert_int_equal(errno, EBADMSG);
	fx_path(path, sizeof(path), "fx_bid.so");	/* right build id, no .symtab */
	dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), elfsym__build_id(es), path);
	assert_null(dbg);
	assert_int_equal(errno, ENOEXEC);
	/* Another binary's debug file, opened for its own build id: attach refuses it. */
	fx_path(path, sizeof(path), "fx_other.debug");
	{
		char other[256];

		testutil__build_id(path, other, sizeof(other));
		dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), other, path);
		assert_non_null(dbg);
		assert_int_equal(elfsym__attach_debug(es, dbg), -EINVAL);
	}
	fx_path(path, sizeof(path), "fx_bid.debug");
	dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), elfsym__build_id(es), path);
	assert_non_null(dbg);
	assert_int_equal(elfsym__attach_debug(es, dbg), 0);
	assert_false(elfsym__needs_debug(es));
	assert_string_equal(elfsym__lookup_vaddr(es, v, NULL), "fx_lib_hidden");
	assert_string_equal(elfsym__debug_file(es), path);
	/* Exported names still resolve. */
	nm_size("fx_bid_full.so", "fx_lib_add", &v, &size);
	assert_string_equal(elfsym__lookup_vaddr(es, v + 1, NULL), "fx_lib_add");
	elfsym__free(es);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elfsym_debuglink_same_dir),
		cmocka_unit_test(test_elfsym_debuglink_debug_subdir),
		cmocka_unit_test(test_elfsym_debuglink_crc_mismatch),
		cmocka_unit_test(test_elfsym_build_id_debug_dir),
		cmocka_unit_test(test_elfsym_build_id_mismatch),
		cmocka_unit_test(test_elfsym_debug_host_fallback),
		cmocka_unit_test(test_elfsym_debuglink_outside_root_refused),
		cmocka_unit_test(test_elfsym_attach_debug),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
