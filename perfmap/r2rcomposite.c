/* r2rcomposite.c: composite ReadyToRun images: the code of many assemblies in one file, named from
 * the metadata of its component assemblies, which are read from the files next to it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "r2r_int.h"
#include "rootfs.h"

/*
 * Checked against composites crossgen2 writes for the .NET 10.0.12 runtime pack (R2R 16.0,
 * `PublishReadyToRunComposite`) and docs/design/coreclr/botr/readytorun-format.md: the
 * composite's READYTORUN header holds the image-wide sections (runtime functions, instance entry
 * points) and ComponentAssemblies, one {CorHeader, ReadyToRunCoreHeader} directory pair per
 * component, parallel to the AssemblyRef table of the composite's manifest metadata (its COR
 * header points to it). Each component's core header (flags, section count, sections) holds its
 * MethodDefEntryPoints. The component files (IL and metadata, "standalone MSIL") carry a
 * READYTORUN header flagged COMPONENT whose only section names the composite
 * (OwnerCompositeExecutable). Composites with embedded MSIL (a CorHeader in the entry) are read
 * the same way, from the component files.
 */

#define COMP_NAME_MAX	240	/* an assembly's file name, without ".dll" */

/* The component file name, opened in files: a source for it (fd >= 0 to close), or -errno. */
static int open_component(const struct r2r_files *files, const char *name, struct src *s)
{
	char file[COMP_NAME_MAX + 8];
	size_t n = strlen(name);
	struct stat st;
	int fd;

	/* One path component, from a hostile image: never a directory walk. */
	if (!n || n > COMP_NAME_MAX || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	memcpy(file, name, n);
	memcpy(file + n, ".dll", 5);
	*s = (struct src){ .fd = -1 };
	for (size_t i = 0; files && i < files->nbufs; i++)
		if (files->bufs[i].name && !strcmp(files->bufs[i].name, file)) {
			s->buf = files->bufs[i].buf ? files->bufs[i].buf : (const uint8_t *)"";
			s->size = files->bufs[i].buf ? files->bufs[i].len : 0;
			return 0;
		}
	if (!files || files->dir_fd < 0)
		return -ENOENT;
	/* A regular file (checked before it is opened for reading), no symlink followed. */
	fd = rootfs__open(files->dir_fd, file, O_RDONLY, S_IFREG, 0, ROOTFS_NO_SYMLINKS);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		close(fd);
		return -EINVAL;
	}
	s->fd = fd;
	s->size = st.st_size;
	return 0;
}

/* Component i's core header at [rva, rva + len): its MethodDefEntryPoints into img. */
static enum r2r_status read_component_code(struct r2r_image *img, const struct src *s,
					   const struct r2r_image *comp, uint32_t i, uint32_t rva)
{
	enum r2r_status st = R2R_OK;
	uint8_t hdr[8], *dir, *sec;
	uint32_t nsec, mrva = 0, mlen = 0;

	dir = pe_read_rva(img, s, rva, sizeof(hdr), sizeof(hdr), &st);
	if (!dir)
		return st;
	memcpy(hdr, dir, sizeof(hdr));
	free(dir);
	img->st.mem_bytes -= sizeof(hdr);
	nsec = le32(hdr + 4);
	if (nsec > R2R_MAX_SECTIONS)
		return R2R_BAD_HEADER;
	if (!(dir = pe_read_rva(img, s, rva + 8, nsec * 12, R2R_MAX_SECTIONS * 12, &st)))
		return st;
	for (uint32_t k = 0; k < nsec && !mrva; k++)
		if (le32(dir + 12 * k) == SEC_METHODDEF_ENTRYPOINTS) {
			mrva = le32(dir + 12 * k + 4);
			mlen = le32(dir + 12 * k + 8);
		}
	free(dir);
	img->st.mem_bytes -= nsec * 12;
	if (!mrva)
		return R2R_OK;	/* no method of its own precompiled */
	if (!(sec = pe_read_rva(img, s, mrva, mlen, img->lim.max_section, &st)))
		return st;
	st = r2r_read_methoddefs(img, comp, &(struct nreader){ sec, mrva, mlen }, i + 1);
	free(sec);
	img->st.mem_bytes -= mlen;
	return st;
}

enum r2r_status r2r_composite_parse(struct r2r_image *img, const struct src *s, uint32_t srva,
				    uint32_t slen, const struct r2r_files *files)
{
	enum r2r_status st = R2R_OK;
	uint32_t n = slen / 16;
	uint8_t *ent;

	if (!n || n > MAX_COMPONENTS)
		return n ? R2R_TOO_BIG : R2R_BAD_HEADER;
	if (!(ent = pe_read_rva(img, s, srva, n * 16, MAX_COMPONENTS * 16, &st)))
		return st;
	if (!(img->comps = calloc(n, sizeof(*img->comps)))) {
		free(ent);
		return R2R_NOMEM;
	}
	img->ncomps = n;
	img->st.components = n;
	for (uint32_t i = 0; i < n && st != R2R_NOMEM; i++) {
		/* parallel to the manifest metadata's AssemblyRef rows (1-based) */
		const char *name = md_string(img, md_cell(img, T_ASSEMBLYREF, i + 1, 6));
		struct r2r_image *comp = NULL;
		struct src cs;
		int err = open_component(files, name, &cs);

		if (!err) {
			comp = r2r_open_metadata(&cs, &img->lim);
			if (cs.fd >= 0)
				close(cs.fd);
		}
		if (!comp && !err) {
			st = R2R_NOMEM;
			break;
		}
		if (!comp || comp->st.status != R2R_OK || strcmp(comp->assembly, name)) {
			/* missing, unreadable, or another assembly than the manifest says */
			if (comp)
				img->st.bytes_read += comp->st.bytes_read;
			r2r__free(comp);
			img->st.components_unread++;
			continue;
		}
		comp->composite = img;
		img->comps[i] = comp;
		img->st.mem_bytes += comp->st.mem_bytes;
		img->st.bytes_read += comp->st.bytes_read;
		st = read_component_code(img, s, comp, i, le32(ent + 16 * i + 8));
		if (st != R2R_OK && st != R2R_NOMEM) {
			img->st.bad_entries++;	/* one component's header: its methods stay unnamed */
			st = R2R_OK;
		}
	}
	free(ent);
	img->st.mem_bytes -= (uint64_t)n * 16;
	return st;
}

const struct r2r_image *r2r_md_of(const struct r2r_image *img, uint32_t rid)
{
	uint32_t tag = rid >> RID_BITS;

	if (!tag)
		return img->ncomps ? NULL : img;
	return tag <= img->ncomps ? img->comps[tag - 1] : NULL;
}

const struct r2r_image *r2r_module(const struct r2r_image *ctx, uint32_t idx)
{
	/*
	 * A signature's module indexes are its image's (the runtime's ZapSig module), whichever
	 * module its tokens are read in at that point. A composite has no input MSIL of its own
	 * (ILAR = 0 in the R2R 6.3+ rules): 0 is the global context, 1 the manifest metadata itself,
	 * and i >= 2 its AssemblyRef row i - 1, that is component i - 2.
	 */
	const struct r2r_image *c = ctx->ncomps ? ctx : ctx->composite;

	if (!c || idx < 2)
		return NULL;	/* a standalone image (other modules are not ours), or no types */
	return idx - 2 < c->ncomps ? c->comps[idx - 2] : NULL;
}

void r2r_composite_free(struct r2r_image *img)
{
	for (uint32_t i = 0; i < img->ncomps; i++)
		r2r__free(img->comps[i]);
	free(img->comps);
	img->comps = NULL;
	img->ncomps = 0;
}
