/* dirout.h: the directory exporter: DIR/<service>/<start>-<end>.pb.gz per series and window,
 * written atomically, the oldest files removed past a total size cap. */
#ifndef SPANPROF_DIROUT_H
#define SPANPROF_DIROUT_H

#include <stddef.h>
#include <stdint.h>

struct exporter;

/*
 * dir is created if missing. The series label named by name_label (e.g. "service_name") names
 * the subdirectory (characters other than [A-Za-z0-9._-] become '_'). max_bytes 0: no cap.
 * NULL with a one-line reason in err.
 */
struct exporter *dirout__new(const char *dir, const char *name_label, uint64_t max_bytes,
			     char *err, size_t errlen);

/* Keep the newest files under dir/<sub>/ whose sizes add up to at most max_bytes; the rest are
 * removed. Returns the number removed, or -errno. */
int dirout__trim(int dir_fd, uint64_t max_bytes);

#endif /* SPANPROF_DIROUT_H */
