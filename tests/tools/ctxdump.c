/* ctxdump.c: debug tool: print the span-context table of a hooked .NET process (ctxdump [-t TID] PID). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "spanctx.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: ctxdump [-t TID] [-a] PID\n"
		"  prints the header, the key table and every claimed slot of PID's span table\n"
		"  -t TID  only the slot the sampler would use for TID (a thread id in PID's namespace)\n"
		"  -a      read every slot, not only pages the process has touched (allocates its pages)\n"
		"exit: 0 ok, 2 usage, 3 not hooked, 4 invalid table, 5 no slot for TID, 1 other error\n");
}

/* Prints a value quoted, with anything unprintable escaped, so one slot stays on one line. */
static void print_quoted(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Host view of thread tid's start (stat field 22) through its namespace tid; -1 when none. */
struct task_info {
	long nstid;
	long long start;
};

/* fopen of name relative to dir (a /proc directory fd); NULL when it does not open. */
static FILE *fopenat(int dir, const char *name, const char *mode)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, mode);
	if (!f)
		close(fd);
	return f;
}

static int load_tasks(int dir_fd, struct task_info **out, size_t *n_out)
{
	char path[96], buf[4096];
	struct task_info *tasks = NULL, *nt;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int task_fd;
	DIR *d;

	task_fd = openat(dir_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (task_fd < 0)
		return -errno;
	d = fdopendir(task_fd);
	if (!d) {
		close(task_fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);
		long nstid = tid;
		long long start = -1;
		FILE *f;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "%ld/status", tid);
		f = fopenat(task_fd, path, "r");
		if (f) {
			while (fgets(buf, sizeof(buf), f)) {
				if (!strncmp(buf, "NSpid:", 6)) {
					char *p = buf + 6, *e;

					for (;;) {
						long v = strtol(p, &e, 10);

						if (e == p)
							break;
						nstid = v;
						p = e;
					}
				}
			}
			fclose(f);
		}
		snprintf(path, sizeof(path), "%ld/stat", tid);
		f = fopenat(task_fd, path, "r");
		if (f) {
			if (fgets(buf, sizeof(buf), f)) {
				char *p = strrchr(buf, ')');

				/* fields resume after the last ')'; starttime is field 22 */
				for (int field = 2; p && field < 22; field++)
					p = strchr(p + 1, ' ');
				if (p)
					start = strtoll(p + 1, NULL, 10);
			}
			fclose(f);
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nt = realloc(tasks, cap * sizeof(*tasks));
			if (!nt) {
				free(tasks);
				closedir(d);
				return -ENOMEM;
			}
			tasks = nt;
		}
		tasks[n].nstid = nstid;
		tasks[n].start = start;
		n++;
	}
	closedir(d);
	*out = tasks;
	*n_out = n;
	return 0;
}

static const char *thread_state(const struct task_info *tasks, size_t n, uint32_t tid, uint64_t start)
{
	for (size_t i = 0; i < n; i++) {
		if (tasks[i].nstid != (long)tid)
			continue;
		/* The hook's tick conversion can be one tick off when a time namespace offset is not a
		 * whole tick (hook/README.md). */
		if (tasks[i].start >= 0 && (uint64_t)tasks[i].start + 1 >= start &&
		    (uint64_t)tasks[i].start <= start + 1)
			return "live";
		return "reused";
	}
	return "dead";
}

static void print_slot(uint32_t index, const uint8_t *slot, uint32_t slot_size,
		       const struct spanctx_keys *keys, const struct task_info *tasks, size_t n_tasks)
{
	const struct sp_slot_head *h = (const void *)slot;
	struct spanctx_labels *l;
	size_t rec_len = slot_size - SP_SLOT_HEAD;
	int err;

	printf("slot %u tid=%u start_ticks=%llu thread=%s", index, h->tid,
	       (unsigned long long)h->start_ticks, thread_state(tasks, n_tasks, h->tid, h->start_ticks));
	l = malloc(sizeof(*l));
	if (!l) {
		printf(" error=nomem\n");
		return;
	}
	if (rec_len > SP_CTX_MAX)
		rec_len = SP_CTX_MAX;
	err = spanctx__decode(slot + SP_SLOT_HEAD, rec_len, keys, l);
	if (err == -EAGAIN) {
		printf(" valid=0\n");
		goto free_labels;
	}
	if (err) {
		printf(" error=%s\n", strerror(-err));
		goto free_labels;
	}
	printf(" valid=1");
	if (l->head.has_span)
		printf(" trace=%s span=%s flags=%02x", l->head.trace_id, l->head.span_id,
		       l->head.trace_flags);
	else
		printf(" nospan");
	if (l->head.local_root_span_id[0])
		printf(" local_root_span_id=%s", l->head.local_root_span_id);
	if (l->head.has_span) {
		printf(" span_name=");
		print_quoted(l->span_name, l->head.span_name_len ? strlen(l->span_name) : 0);
	}
	for (uint32_t i = 0; i < l->head.n_labels; i++) {
		printf(" %s=", l->labels[i].key);
		print_quoted(l->labels[i].value, l->labels[i].len);
	}
	if (l->head.unknown_keys)
		printf(" unknown_keys=%u", l->head.unknown_keys);
	if (l->head.skipped)
		printf(" skipped=%u", l->head.skipped);
	if (l->head.truncated)
		printf(" truncated=1");
	putchar('\n');
free_labels:
	free(l);
}

/* 1 when the page holding addr is resident in pid (pagemap bit 63); 1 too when unknown. */
static int page_present(FILE *pagemap, uint64_t addr, long page)
{
	uint64_t e;

	if (!pagemap)
		return 1;
	if (fseeko(pagemap, (off_t)(addr / (uint64_t)page * 8), SEEK_SET) ||
	    fread(&e, sizeof(e), 1, pagemap) != 1)
		return 1;
	return (int)(e >> 63);
}

int main(int argc, char **argv)
{
	struct spanctx_table t;
	struct sp_ctx_proc proc;
	struct spanctx_keys *keys = NULL;
	struct task_info *tasks = NULL;
	size_t n_tasks = 0;
	uint8_t *slot = NULL;
	FILE *pagemap = NULL;
	long only_tid = -1, page = sysconf(_SC_PAGESIZE);
	int all = 0, opt, pid, dir_fd, mem = -1, err, ret = 1;
	uint32_t claimed = 0;

	while ((opt = getopt(argc, argv, "t:ah")) != -1) {
		switch (opt) {
		case 't':
			only_tid = strtol(optarg, NULL, 10);
			break;
		case 'a':
			all = 1;
			break;
		default:
			usage();
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 2;
	}
	pid = (int)strtol(argv[optind], NULL, 10);
	/* Every read below goes through this directory: never another process that reuses pid. */
	dir_fd = procfs__open(pid);
	if (dir_fd < 0) {
		fprintf(stderr, "ctxdump: pid %d: %s\n", pid, strerror(-dir_fd));
		return 1;
	}

	memset(&t, 0, sizeof(t));
	err = spanctx__find(dir_fd, &proc, &t);
	if (err == -ENOENT && !t.map_start) {
		fprintf(stderr, "ctxdump: pid %d: not hooked (no /memfd:%s mapping)\n", pid, SP_CTX_MEMFD_NAME);
		ret = 3;
		goto cleanup;
	}
	if (err == -ENOENT) {
		printf("table pid=%d nspid=%u flags=%u disabled\n", pid, t.ns_pid, t.flags);
		ret = 3;
		goto cleanup;
	}
	if (err) {
		fprintf(stderr, "ctxdump: pid %d: %s\n", pid, strerror(-err));
		ret = err == -EBADMSG || err == -EPROTONOSUPPORT || err == -EAGAIN ? 4 : 1;
		goto cleanup;
	}
	printf("table pid=%d nspid=%u addr=0x%llx slots_addr=0x%llx slots=%u slot_size=%u keys=%u "
	       "slots_full=%llu flags=%u published_at_ns=%llu\n",
	       pid, t.ns_pid, (unsigned long long)t.map_start, (unsigned long long)proc.slots_addr,
	       proc.slot_count, proc.slot_size, t.keys_count, (unsigned long long)t.slots_full, t.flags,
	       (unsigned long long)t.published_at_ns);

	keys = spanctx_keys__new();
	slot = malloc(proc.slot_size);
	if (!keys || !slot) {
		fprintf(stderr, "ctxdump: out of memory\n");
		goto cleanup;
	}
	err = spanctx_keys__load(keys, dir_fd, &t);
	if (err < 0) {
		fprintf(stderr, "ctxdump: key table: %s\n", strerror(-err));
		goto cleanup;
	}
	for (uint32_t i = 0; i < spanctx_keys__count(keys); i++)
		printf("key %u %s\n", i, spanctx_keys__name(keys, i));
	if (spanctx_keys__bad(keys))
		printf("keys_bad=%u\n", spanctx_keys__bad(keys));
	err = load_tasks(dir_fd, &tasks, &n_tasks);
	if (err)
		fprintf(stderr, "ctxdump: threads: %s (thread state unknown)\n", strerror(-err));
	/* One fd of its memory for the slot reads, closed when done. */
	mem = procfs__open_mem(dir_fd);
	if (mem < 0) {
		fprintf(stderr, "ctxdump: pid %d: mem: %s\n", pid, strerror(-mem));
		goto cleanup;
	}

	if (only_tid >= 0) {
		/* The sampler's lookup: first probe whose tid matches. */
		for (uint32_t i = 0; i < SP_CTX_PROBES; i++) {
			uint32_t idx = spanctx__probe((uint32_t)only_tid, i, proc.slot_count);
			uint64_t addr = proc.slots_addr + (uint64_t)idx * proc.slot_size;

			err = procfs__pread_mem(mem, addr, slot, proc.slot_size);
			if (err) {
				fprintf(stderr, "ctxdump: slot %u: %s\n", idx, strerror(-err));
				goto cleanup;
			}
			if (((struct sp_slot_head *)slot)->tid == (uint32_t)only_tid) {
				print_slot(idx, slot, proc.slot_size, keys, tasks, n_tasks);
				ret = 0;
				goto cleanup;
			}
		}
		printf("noslot tid=%ld\n", only_tid);
		ret = 5;
		goto cleanup;
	}

	if (!all)
		pagemap = fopenat(dir_fd, "pagemap", "rb");
	for (uint32_t idx = 0; idx < proc.slot_count; idx++) {
		uint64_t addr = proc.slots_addr + (uint64_t)idx * proc.slot_size;

		/* An untouched slot's page is not resident; reading it would allocate it in the target. */
		if (!page_present(pagemap, addr, page))
			continue;
		err = procfs__pread_mem(mem, addr, slot, proc.slot_size);
		if (err) {
			fprintf(stderr, "ctxdump: slot %u: %s\n", idx, strerror(-err));
			goto cleanup;
		}
		if (((struct sp_slot_head *)slot)->tid == 0)
			continue;
		claimed++;
		print_slot(idx, slot, proc.slot_size, keys, tasks, n_tasks);
	}
	printf("claimed=%u\n", claimed);
	ret = 0;
cleanup:
	if (pagemap)
		fclose(pagemap);
	if (mem >= 0)
		close(mem);
	close(dir_fd);
	free(tasks);
	free(slot);
	spanctx_keys__free(keys);
	return ret;
}
