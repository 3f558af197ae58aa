#!/usr/bin/env bash
# switches.sh: the switches only tests and benchmarks may use are not in the shipped builds.
# build/spanprof does not contain nor obey SPANPROF_TEST_REMOTE_FSTYPES, SPANPROF_TEST_CTX_EVENTS
# and SPANPROF_BPF_VARIANT, nor the hook (build/hook/SpanProf.Hook.dll) SPANPROF_HOOK_FAULT; the
# test builds (build/spanprof-test, SPANPROF_TEST_BUILD; build/testhook, SPANPROF_TEST_FAULTS) obey
# them, which shows each case can tell the two apart.
. "$(dirname "$0")/lib.sh"
need_root
FAKE=$BUILD/apps/native/fake_dotnet
need_built "$SPANPROF_TEST" "$FAKE" "$HOTCHAIN"

# 1. The names are not in the shipped binary at all.
for v in SPANPROF_TEST_REMOTE_FSTYPES SPANPROF_TEST_CTX_EVENTS SPANPROF_BPF_VARIANT; do
	grep -aq "$v" "$SPANPROF_TEST" || fail "the test build does not contain $v (the check below proves nothing)"
	! grep -aq "$v" "$SPANPROF" || fail "the shipped build contains $v"
done
pass "the shipped build contains none of SPANPROF_TEST_REMOTE_FSTYPES, SPANPROF_TEST_CTX_EVENTS, SPANPROF_BPF_VARIANT"

# 2. SPANPROF_TEST_REMOTE_FSTYPES=tmpfs: a perf map on tmpfs (/dev/shm) is read by the shipped
# build, refused by the test build.
SHM=$(mktemp -d /dev/shm/spanprof-switches-XXXXXX)
rm_shm() { rm -rf "$SHM"; }
at_exit rm_shm
start_app --pid-line --timeout 60 "$TMP/fake.out" env DOTNET_PerfMapJitDumpPath="$SHM" \
	"$FAKE" "$SHM/libcoreclr.so" "$SHM" 1000 60 0.2 100
pid=$APP_PID
SPANPROF_TEST_REMOTE_FSTYPES=tmpfs record shipped.pb.gz -p "$pid" -d 2 --no-enable-perfmap
SPANPROF_TEST_REMOTE_FSTYPES=tmpfs "$SPANPROF_TEST" record -p "$pid" -d 2 --no-enable-perfmap \
	-o "$TMP/test.pb.gz" > "$TMP/test.txt" || { cat "$TMP/test.txt"; fail "the test build failed"; }
grep -q "refused $SHM/perf-$pid.map: on a tmpfs file system" "$TMP/test.txt" ||
	{ cat "$TMP/test.txt"; fail "the test build did not refuse a perf map on a file system named remote"; }
! grep -q "refused $SHM/perf-$pid.map" "$TMP/shipped.txt" ||
	{ cat "$TMP/shipped.txt"; fail "the shipped build obeyed SPANPROF_TEST_REMOTE_FSTYPES"; }
pprof_has 'Burst::Spin' "$TMP/shipped.pb.gz" ||
	{ cat "$TMP/shipped.txt"; fail "the shipped build did not name the code in the tmpfs perf map"; }
stop "$pid"
pass "SPANPROF_TEST_REMOTE_FSTYPES: the shipped build read the tmpfs perf map, the test build refused it"

# 3. SPANPROF_TEST_CTX_EVENTS=none: the test build starts without span-table events; the shipped
# build takes the kernel's first source as always.
ctx_events() {	# ctx_events NAME BINARY: -v's start lines of a short host-wide recording
	SPANPROF_TEST_CTX_EVENTS=none "$2" record -v -d 0.5 -p "$$" -o "$TMP/$1.pb.gz" > "$TMP/$1.txt" 2> "$TMP/$1.err" ||
		{ cat "$TMP/$1.err"; fail "$1: exit non-zero"; }
}
ctx_events ctx-test "$SPANPROF_TEST"
grep -q 'span-table events unavailable' "$TMP/ctx-test.err" ||
	{ cat "$TMP/ctx-test.err"; fail "the test build ignored SPANPROF_TEST_CTX_EVENTS=none"; }
ctx_events ctx-shipped "$SPANPROF"
if grep -q 'span-table events unavailable' "$TMP/ctx-shipped.err"; then
	grep -q 'span-table events unavailable' <(env -u SPANPROF_TEST_CTX_EVENTS "$SPANPROF" record -v -d 0.5 -p "$$" \
		-o "$TMP/ctx-plain.pb.gz" 2>&1 > /dev/null) && skip "this kernel has no span-table events at all"
	cat "$TMP/ctx-shipped.err"
	fail "the shipped build obeyed SPANPROF_TEST_CTX_EVENTS=none"
fi
pass "SPANPROF_TEST_CTX_EVENTS=none: the shipped build kept its span-table events, the test build dropped them"

# 4. SPANPROF_BPF_VARIANT=no-ustack (the benchmarks' sampler without a part): the test build walks
# no user stack, so hotchain's main -> outer -> inner_hot is not in its stacks; the shipped build
# loads the whole sampler and has it.
start_app --pid-line --timeout 60 "$TMP/hot.out" "$HOTCHAIN" 60
hot=$APP_PID
variant() {	# variant NAME BINARY: a folded recording of hotchain with SPANPROF_BPF_VARIANT=no-ustack
	SPANPROF_BPF_VARIANT=no-ustack "$2" record -v -p "$hot" -d 1 -o "$TMP/$1.folded" > "$TMP/$1.txt" 2> "$TMP/$1.err" ||
		{ cat "$TMP/$1.err"; fail "$1: exit non-zero"; }
}
chain=';main;outer;inner_hot [0-9]+$'
variant var-test "$SPANPROF_TEST"
grep -q 'sampler variant: no-ustack' "$TMP/var-test.err" && [ -s "$TMP/var-test.folded" ] &&
	! grep -Eq "$chain" "$TMP/var-test.folded" ||
	{ cat "$TMP/var-test.err"; head "$TMP/var-test.folded"; fail "the test build ignored SPANPROF_BPF_VARIANT=no-ustack"; }
variant var-shipped "$SPANPROF"
! grep -q 'sampler variant' "$TMP/var-shipped.err" && grep -Eq "$chain" "$TMP/var-shipped.folded" ||
	{ cat "$TMP/var-shipped.err"; head "$TMP/var-shipped.folded"; fail "the shipped build obeyed SPANPROF_BPF_VARIANT=no-ustack"; }
stop "$hot"
pass "SPANPROF_BPF_VARIANT=no-ustack: the shipped build walked the user stacks, the test build did not"

# 5. The hook: SPANPROF_HOOK_FAULT is read by its test build only (build/testhook, SPANPROF_TEST_FAULTS).
need_cmd dotnet
APP=$BUILD/apps/HotChain/HotChain
need_built "$HOOK" "$TESTHOOK" "$APP"
utf16() { python3 -c 'import sys; sys.exit(0 if open(sys.argv[1], "rb").read().count(sys.argv[2].encode("utf-16-le")) else 1)' "$@"; }
utf16 "$TESTHOOK" SPANPROF_HOOK_FAULT || fail "the hook's test build does not contain SPANPROF_HOOK_FAULT (the check below proves nothing)"
! utf16 "$HOOK" SPANPROF_HOOK_FAULT || fail "the shipped hook contains SPANPROF_HOOK_FAULT"
# Nor do the package's assemblies (every target framework).
for pkg in "$BUILD"/nuget/SpanProf.Hook.*.nupkg; do
	[ -e "$pkg" ] || continue
	python3 - "$pkg" <<'PY' || fail "$pkg: an assembly contains SPANPROF_HOOK_FAULT"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
dlls = [n for n in z.namelist() if n.endswith("SpanProf.Hook.dll")]
sys.exit(1 if not dlls or any("SPANPROF_HOOK_FAULT".encode("utf-16-le") in z.read(n) for n in dlls) else 0)
PY
done
# hook_table NAME DLL: HotChain with DLL as its startup hook and SPANPROF_HOOK_FAULT=memfd; the
# number of span-table mappings it has once it runs.
hook_table() {
	start_app "$TMP/$1.out" env DOTNET_STARTUP_HOOKS="$2" SPANPROF_HOOK_FAULT=memfd "$APP" 30
	TABLES=$(grep -c '/memfd:spanprof-ctx' "/proc/$APP_PID/maps" || true)
	stop "$APP_PID"
}
hook_table testhook "$TESTHOOK"
[ "$TABLES" = 0 ] && grep -q 'disabled: memfd_create failed' "$TMP/testhook.out" ||
	{ cat "$TMP/testhook.out"; fail "the hook's test build ignored SPANPROF_HOOK_FAULT=memfd ($TABLES table mappings)"; }
hook_table shipped "$HOOK"
[ "$TABLES" -ge 1 ] && ! grep -q 'disabled' "$TMP/shipped.out" ||
	{ cat "$TMP/shipped.out"; fail "the shipped hook obeyed SPANPROF_HOOK_FAULT=memfd ($TABLES table mappings)"; }
pass "SPANPROF_HOOK_FAULT: not in the shipped hook, which maps its table under SPANPROF_HOOK_FAULT=memfd; the test build does not"
