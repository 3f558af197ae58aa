/* registry.c: the runtimes a session attaches to processes, by enum runtime_id. */
#include "runtime.h"

extern const struct runtime_ops dotnet_runtime;	/* dotnetproc.c */
extern const struct runtime_ops spanctx_runtime;	/* hookproc.c */
extern const struct runtime_ops otelctx_runtime;	/* otelctx.c */

const struct runtime_ops *const runtime_registry[RT__MAX] = {
	[RT_DOTNET] = &dotnet_runtime,
	[RT_SPANCTX] = &spanctx_runtime,
	[RT_OTELCTX] = &otelctx_runtime,
};
