/* otlp_int.h: what the files of the OTLP exporter (otlp.c) share: the protobuf-c names, the
 * request's dictionary and what one batch builds. Not for use outside user/export/otlp*.c. */
#ifndef SPANPROF_OTLP_INT_H
#define SPANPROF_OTLP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "intern.h"
#include "otlp.h"
#include "profile.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	pb_request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles pb_rprofiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles pb_sprofiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile pb_profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType pb_value_type;
typedef Opentelemetry__Proto__Profiles__V1development__Sample pb_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping pb_mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location pb_location;
typedef Opentelemetry__Proto__Profiles__V1development__Line pb_line;
typedef Opentelemetry__Proto__Profiles__V1development__Function pb_function;
typedef Opentelemetry__Proto__Profiles__V1development__Stack pb_stack;
typedef Opentelemetry__Proto__Profiles__V1development__Link pb_link;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit pb_kvu;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_kv;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;

#define REQ_SIZE	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size
#define REQ_PACK	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack
#define REQ_INIT	OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT
#define ANY_STRING	OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

#define SCOPE_NAME	"spanprof"
#define FRAME_TYPE_KEY	"profile.frame.type"
#define BUILD_ID_KEY	"process.executable.build_id.gnu"
#define UNKNOWN_SERVICE	"unknown_service"	/* the SDKs' default service.name */
/* ---- the dictionary ------------------------------------------------------------------------- */

/*
 * Each table interns a fixed key per entry (zeroed first: padding takes part in the hash), so
 * equal entries share one index across every profile of the request. Entry 0 of each is the zero
 * value, interned first, so index 0 means "none" as the schema requires.
 */
struct map_key {
	uint64_t start, limit, offset;
	int32_t filename;
	int32_t attr;		/* build id attribute, or 0 */
};

struct fn_key {
	int32_t name, system_name, filename;
};

struct loc_key {
	uint64_t address;
	int32_t mapping;
	int32_t function;	/* 0: no line */
	int32_t attr;		/* profile.frame.type */
	int32_t pad;
};

struct link_key {
	uint8_t trace[16];
	uint8_t span[8];
	uint8_t has_trace, has_span;
};

/* An attribute: key string index, a kind byte, then the value (the intern's NUL ends a string). */
#define ATTR_HDR (sizeof(int32_t) + 1)
enum { KIND_STR = 's', KIND_INT = 'i' };

struct dict {
	struct intern *str, *map, *fn, *loc, *stack, *link, *attr;
	int32_t frame_type[3];	/* the kernel, dotnet, native attributes once used; 0 before */
};
/* One sample as the request will hold it. */
struct smp {
	int32_t stack;
	int32_t link;
	size_t attr_off;	/* its attribute indices in the batch-wide pool */
	size_t n_attr;
	int64_t value;
};

struct build {
	struct dict d;
	struct smp *smp;
	size_t n_smp, cap_smp;
	int32_t *attrs;		/* every sample's attribute indices */
	size_t n_attrs, cap_attrs;
	int32_t *locs;		/* scratch: one stack */
	size_t cap_locs;
};


/* otlpdict.c: label names to semantic conventions, the dictionary, one profile into it. */
/* The attribute name of label (NULL: not one); *integer set when its value is an integer. */
const char *otlp_attr_name(const char *label, int *integer);
/* A decimal integer that fits int64, all of s: 0, or -1. */
int otlp_parse_int(const char *s, int64_t *out);
/* The dictionary's tables, the zero entry of each interned first: 0, or -ENOMEM. */
int otlp_dict_init(struct dict *d);
void otlp_dict_free(struct dict *d);
/* The string table index of s (NULL: ""); -ENOMEM. */
int32_t otlp_dict_str(struct dict *d, const char *s);
/* Every sample of p into b, its tables into b->d. *proc_name: the one process_name label of
 * every sample, NULL when there are several (for a default service.name). 0, or -errno. */
int otlp_add_profile(struct build *b, const struct profile *p, int off_cpu,
		     struct otlp_encode_info *info, const char **proc_name, int *proc_many);

#endif /* SPANPROF_OTLP_INT_H */
