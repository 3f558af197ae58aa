/* r2r.h: ReadyToRun (precompiled .NET) code ranges and method names read from the PE image. */
#ifndef SPANPROF_R2R_H
#define SPANPROF_R2R_H

#include <stddef.h>
#include <stdint.h>

/*
 * One struct r2r_image holds the precompiled methods of one R2R image: its runtime functions
 * (code ranges by RVA, cold parts and funclets included) and, for each, the method it belongs
 * to, named as the runtime's perf map names it ("instance bool [System.Private.CoreLib]
 * System.Text.Ascii::IsValid(...)"). The file is hostile input: every read is bounded by the
 * caps below and by the file size (never by a size the file declares), and malformed input is
 * counted per cause, never fatal to the caller.
 */
struct r2r_image;

/* Why an image has no table (r2r_image_stats.status). */
enum r2r_status {
	R2R_OK = 0,
	R2R_UNREADABLE,		/* read error, or not a regular file */
	R2R_NOT_PE,		/* no MZ/PE headers, or headers out of bounds */
	R2R_NOT_CLI,		/* PE without a CLI (COR) header: a native DLL */
	R2R_NOT_R2R,		/* IL only: no READYTORUN header */
	R2R_UNSUPPORTED,	/* uncompressed metadata (#-), a future major version */
	R2R_BAD_HEADER,		/* PE/COR/R2R header or section directory inconsistent */
	R2R_BAD_METADATA,	/* ECMA-335 metadata root, streams or tables inconsistent */
	R2R_TOO_BIG,		/* a section or the metadata is larger than the caps */
	R2R_NOMEM,
	R2R_OVER_BUDGET,	/* its tables did not fit the program's symbol budget (r2r__get) */
	R2R_COMPONENT,		/* a component of a composite image: its code is in the composite */
	R2R__STATUS_MAX,
};

struct r2r_image_stats {
	enum r2r_status status;
	uint16_t major, minor;	/* READYTORUN header version */
	uint32_t functions;	/* runtime functions (code ranges) */
	uint32_t methods;	/* methods with precompiled code (method defs + instantiations) */
	uint32_t instances;	/* of which generic instantiations */
	uint32_t orphans;	/* runtime functions that no method entry leads to (left unnamed) */
	uint32_t bad_entries;	/* entry points that do not decode or point past the functions */
	uint32_t bad_sigs;	/* method/owner signatures that do not decode (generic fallback name) */
	uint32_t unsupported;	/* instantiations named by token in another module (not named) */
	uint32_t components;	/* a composite image's component assemblies */
	uint32_t components_unread;	/* of which not found or not readable (their methods unnamed) */
	uint64_t bytes_read;	/* what the parse read from the file */
	uint64_t mem_bytes;	/* what the table holds */
	uint64_t parse_ns;
};

struct r2r_limits {
	uint64_t max_section;	/* largest R2R section read (default 64 MiB) */
	uint64_t max_metadata;	/* largest metadata blob read (default 128 MiB) */
	uint32_t max_functions;	/* runtime functions (default 4 M) */
};

/* "Open" an image from a file (pread, bounded) or a buffer. Never NULL except when out of
 * memory (errno ENOMEM): an image that is not usable has status != R2R_OK and names nothing,
 * so callers can cache the answer. limits may be NULL. */
struct r2r_image *r2r__open_fd(int fd, const struct r2r_limits *limits);
struct r2r_image *r2r__open_buf(const void *buf, size_t len, const struct r2r_limits *limits);

/*
 * A composite image (the code of many assemblies, `PublishReadyToRunComposite`) is named from its
 * component assemblies' metadata, read from the files next to it ("System.Runtime.dll"):
 * r2r__open_fd_in opens them in dir_fd, the composite's directory (names from the image are
 * single path components, opened with O_NOFOLLOW; -1: none), r2r__open_buf_with takes them as
 * named buffers (tests, fuzzing). A component that is missing leaves its methods unnamed
 * (components_unread).
 */
struct r2r_named_buf {
	const char *name;	/* file name, "System.Runtime.dll" */
	const void *buf;
	size_t len;
};
struct r2r_image *r2r__open_fd_in(int fd, int dir_fd, const struct r2r_limits *limits);
struct r2r_image *r2r__open_buf_with(const void *buf, size_t len, const struct r2r_named_buf *comps,
				     size_t ncomps, const struct r2r_limits *limits);
void r2r__free(struct r2r_image *img);	/* NULL-safe; not for images from r2r__get */

void r2r__stats(const struct r2r_image *img, struct r2r_image_stats *out);
const char *r2r__status_str(enum r2r_status st);

/* The RVA that file offset off of the image is loaded at (the loader maps each PE section at its
 * own RVA): 0, or -ENOENT when off is in no section. */
int r2r__file_to_rva(const struct r2r_image *img, uint64_t off, uint32_t *rva);

/* The precompiled method whose code contains rva: its runtime name (valid until the image is
 * freed), and the runtime function's range [*start, *end) when non-NULL. NULL when no function
 * contains rva, or its method is not known. Not thread-safe (names are formatted lazily). */
const char *r2r__lookup(struct r2r_image *img, uint32_t rva, uint32_t *start, uint32_t *end);

/* The i-th runtime function, in RVA order: its range and method name (NULL: unnamed). Tests
 * and fuzzing walk every function with it. -ENOENT past the end. */
int r2r__function(struct r2r_image *img, uint32_t i, uint32_t *start, uint32_t *end,
		  const char **name);

/*
 * Images shared by file identity (device, inode, size, mtime, ctime), not by path or process:
 * r2r__get parses an image at the first request (fd is only read, never kept) and hands out
 * references; r2r__put drops one and frees the image with the last. Not thread-safe. An image
 * takes what its tables hold from the program's symbol budget (symbudget.h) while cached; one
 * that does not fit is handed out empty, status R2R_OVER_BUDGET, and not cached (asked again,
 * it is parsed again).
 * NULL only when out of memory or fstat fails (errno set).
 */
struct r2r_image *r2r__get(int fd);
struct r2r_image *r2r__get_in(int fd, int dir_fd);	/* a composite's components in dir_fd */
void r2r__put(struct r2r_image *img);	/* NULL-safe */
uint32_t r2r__cached(void);		/* images in the cache (tests) */

#endif /* SPANPROF_R2R_H */
