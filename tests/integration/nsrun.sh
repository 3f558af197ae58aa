#!/bin/sh
# nsrun.sh: run a command as pid 1 of new pid and mount namespaces with a private, empty /tmp (a
# container's view), keeping the repository visible at the same path even when it lives under
# /tmp itself. NSRUN_SETUP, if set, is a shell command run inside first (after /tmp is private).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
exec unshare --pid --fork --mount --mount-proc --propagation private sh -c '
	root=$1; shift
	keep=$(mktemp -d /run/spanprof-nsrun.XXXXXX)
	mount --bind "$root" "$keep"
	mount -t tmpfs tmpfs /tmp
	mkdir -p "$root"
	mount --bind "$keep" "$root"
	umount -l "$keep"
	rmdir "$keep"
	eval "${NSRUN_SETUP:-:}"
	exec "$@"' sh "$ROOT" "$@"
