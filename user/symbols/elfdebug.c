/* elfdebug.c: the debug file of an ELF file for the symbol reader (elfsym.c): by build id or
 * .gnu_debuglink (CRC checked), searched inside the process's root. */
#include "elfsym.h"
#include "elfsym_int.h"
#include "rootfs.h"
#include "util.h"
#include "vec.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

/* ---- debug files ---------------------------------------------------------------------------- */

static int crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, n);
		off += n;
	}
	return n == 0 && (uint32_t)crc == want;
}

static void refuse_outside(struct elfsym *es, const char *path)
{
	es->stats.debug_outside_refused++;
	if (!es->refused[0])
		snprintf(es->refused, sizeof(es->refused), "%s", path);
}

/* Try one candidate debug file: open inside the root, then outside it (spanprof's own root)
 * unless that is the same directory. Outside the root a file is taken only on the binary's build
 * id: a .gnu_debuglink of a container's binary must not name the host's files. Keeps its .symtab
 * handle in dbg. Returns 1 when dbg is usable, 0 otherwise (dbg closed). */
static int try_debug(struct elfsym *es, const struct elffile *main_f, int root_fd, int same_root,
		     const char *path, const uint32_t *crc, struct elffile *dbg)
{
	int pass, fd;

	for (pass = 0; pass < 2; pass++) {
		int outside = pass == 1;

		if (outside && same_root)
			break;
		fd = rootfs__open(outside ? AT_FDCWD : root_fd, path, O_RDONLY, S_IFREG,
				  ELFSYM_MAX_FILE, 0);
		if (fd < 0)
			continue;
		if (outside && !main_f->build_id_len) {
			close(fd);
			refuse_outside(es, path);
			continue;
		}
		if (elffile_open(dbg, fd, NULL) != 0)
			goto reject;
		if (dbg->ehdr.e_ident[EI_CLASS] != main_f->ehdr.e_ident[EI_CLASS] ||
		    dbg->ehdr.e_machine != main_f->ehdr.e_machine || !dbg->symtab)
			goto reject;
		if (crc && !crc_matches(dbg->fd, *crc))
			goto reject;
		/* A build id on both sides must agree, whichever way the file was found. */
		if (main_f->build_id_len &&
		    (dbg->build_id_len != main_f->build_id_len ||
		     memcmp(dbg->build_id, main_f->build_id, main_f->build_id_len) != 0)) {
			if (outside) {
				refuse_outside(es, path);
				goto close_dbg;
			}
			goto reject;
		}
		es->debug_path = strdup(path);
		if (!es->debug_path)
			goto close_dbg;
		return 1;
reject:
		es->stats.debug_rejected++;
close_dbg:
		elffile_close(dbg);
	}
	return 0;
}

/* Read the .gnu_debuglink name and CRC. Returns 1 when present and sane. */
static int read_debuglink(struct elffile *f, char *name, size_t name_size, uint32_t *crc)
{
	GElf_Shdr sh;
	Elf_Data *d;
	const unsigned char *p;
	size_t len, crc_off;

	if (!f->debuglink || !gelf_getshdr(f->debuglink, &sh) || !elf_in_file(f, sh.sh_offset, sh.sh_size))
		return 0;
	d = elf_getdata(f->debuglink, NULL);
	if (!d || !d->d_buf)
		return 0;
	p = d->d_buf;
	len = strnlen((const char *)p, d->d_size);
	crc_off = (len + 4) & ~(size_t)3;	/* name, NUL, pad to 4 */
	if (len == 0 || len >= name_size || crc_off + 4 > d->d_size)
		return 0;
	memcpy(name, p, len);
	name[len] = '\0';
	/* The name is a file name: one with a slash could point anywhere on the host. */
	if (strchr(name, '/') || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
		return 0;
	if (f->ehdr.e_ident[EI_DATA] == ELFDATA2MSB)
		*crc = (uint32_t)p[crc_off] << 24 | p[crc_off + 1] << 16 | p[crc_off + 2] << 8 | p[crc_off + 3];
	else
		*crc = (uint32_t)p[crc_off + 3] << 24 | p[crc_off + 2] << 16 | p[crc_off + 1] << 8 | p[crc_off];
	return 1;
}

/* 1 when root_fd is spanprof's own root (a host process): looking outside it finds nothing new. */
static int is_own_root(int root_fd)
{
	struct stat a, b;

	return root_fd == AT_FDCWD ||
	       (fstat(root_fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev &&
		a.st_ino == b.st_ino);
}

int elf_find_debug(struct elfsym *es, struct elffile *f, int root_fd, const char *path_hint,
		      struct elffile *dbg)
{
	char link[256], dir[PATH_MAX], path[sizeof(dir) + sizeof(link) + 32];
	int same_root = is_own_root(root_fd);
	const char *slash;
	uint32_t crc;

	if (f->build_id_len >= 2) {
		char hex[2 * MAX_BUILD_ID + 1];

		elf_hex_encode(hex, f->build_id, f->build_id_len);
		snprintf(path, sizeof(path), DEBUG_DIR "/.build-id/%.2s/%s.debug", hex, hex + 2);
		if (try_debug(es, f, root_fd, same_root, path, NULL, dbg))
			return 1;
	}
	if (!read_debuglink(f, link, sizeof(link), &crc))
		return 0;
	if (!path_hint || path_hint[0] != '/' || !(slash = strrchr(path_hint, '/')) ||
	    (size_t)(slash - path_hint) >= sizeof(dir))
		return 0;
	memcpy(dir, path_hint, slash - path_hint);
	dir[slash - path_hint] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, link);
	if (try_debug(es, f, root_fd, same_root, path, &crc, dbg))
		return 1;
	snprintf(path, sizeof(path), "%s/.debug/%s", dir, link);
	if (try_debug(es, f, root_fd, same_root, path, &crc, dbg))
		return 1;
	snprintf(path, sizeof(path), DEBUG_DIR "%s/%s", dir, link);
	return try_debug(es, f, root_fd, same_root, path, &crc, dbg);
}
