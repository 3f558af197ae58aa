#!/usr/bin/env bash
# symbols.sh: runtime symbols of a stripped library. A local HTTP server serves the debug file the
# test made (objcopy --only-keep-debug) in the debuginfod layout, then in the SSQP one: the
# library's local functions get their names. With the server down: a counted failure, frames
# grouped by .eh_frame function, exit 0. A server that never answers: record waits at most 5 s
# after its window, its programs detached. And a container's binary whose .gnu_debuglink names a
# file that exists only on the host: not used, the refusal counted and named.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd cc objcopy strip nm python3 unshare chroot

SRC=$ROOT/tests/apps/native
B=$TMP/bin
mkdir -p "$B"
cc -O1 -g -fno-omit-frame-pointer -fPIC -shared -Wl,--build-id=sha1 -o "$B/libsym_full.so" "$SRC/symlib.c"
objcopy --only-keep-debug "$B/libsym_full.so" "$TMP/libsym.debug"
strip --strip-all -o "$B/libsym.so" "$B/libsym_full.so"
cc -O1 -fno-omit-frame-pointer -o "$B/symprog" "$SRC/symprog.c" -L"$B" -lsym -Wl,-rpath,"$B"
bid=$(readelf -n "$B/libsym.so" | awk '/Build ID/ { print $3 }')
[ -n "$bid" ] || fail "no build id in libsym.so"
# The functions the debug file names, by start address.
nm --defined-only "$TMP/libsym.debug" | awk '$2 ~ /^[tT]$/ { print $1, $3 }' > "$TMP/funcs.txt"
grep -q ' sym_hot_a$' "$TMP/funcs.txt" || fail "the debug file lacks sym_hot_a"
! nm -D --defined-only "$B/libsym.so" | grep -q sym_hot || fail "sym_hot_* exported: not a test"

# serve LAYOUT: a server for the debug file in LAYOUT (debuginfod | ssqp); SRV_URL, SRV_PID.
serve() {
	local dir=$TMP/srv-$1 port
	case $1 in
	debuginfod) mkdir -p "$dir/buildid/$bid" && cp "$TMP/libsym.debug" "$dir/buildid/$bid/debuginfo" ;;
	ssqp) mkdir -p "$dir/_.debug/elf-buildid-sym-$bid" && cp "$TMP/libsym.debug" "$dir/_.debug/elf-buildid-sym-$bid/_.debug" ;;
	esac
	spawn "$TMP/srv-$1.log" python3 -c '
import http.server as h, os, sys
os.chdir(sys.argv[1])
s = h.ThreadingHTTPServer(("127.0.0.1", 0), h.SimpleHTTPRequestHandler)
print("port", s.server_address[1], flush=True)
s.serve_forever()' "$dir"
	SRV_PID=$SPAWNED
	wait_for_line "$TMP/srv-$1.log" '^port ' 10
	port=$(awk '/^port / { print $2; exit }' "$TMP/srv-$1.log")
	SRV_URL=http://127.0.0.1:$port
}

# frames JSON PID: the distinct frame names of PID's samples, one a line.
frames() {
	node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
const seen = new Set();
for (const s of p.samples) if (s.labels.pid === process.argv[2]) for (const f of s.stack) seen.add(f);
console.log([...seen].join("\n"));' "$1" "$2"
}

for layout in debuginfod ssqp; do
	serve $layout
	start_app --pid-line --timeout 30 "$TMP/p-$layout.out" "$B/symprog" 30
	pid=$APP_PID
	unset DEBUGINFOD_URLS
	record $layout.pb.gz -p "$pid" -d 3 --symbol-server "$SRV_URL" --symbol-cache "$TMP/cache-$layout"
	grep -E 'symbol servers' "$TMP/$layout.txt" || { cat "$TMP/$layout.txt"; fail "no symbol server line"; }
	grep -Eq 'symbol servers \(1\): 1 debug files asked, 0 from the cache, 1 fetched' "$TMP/$layout.txt" ||
		{ cat "$TMP/$layout.txt" "$TMP/srv-$layout.log"; fail "$layout: the debug file was not fetched"; }
	grep -q '1 put to use' "$TMP/$layout.txt" || fail "$layout: fetched but not used"
	[ -s "$TMP/cache-$layout/$bid.debug" ] || fail "$layout: not in the cache directory"
	decode "$TMP/$layout.pb.gz"
	frames "$TMP/$layout.json" "$pid" > "$TMP/$layout.frames"
	grep -qx sym_hot_a "$TMP/$layout.frames" && grep -qx sym_hot_b "$TMP/$layout.frames" ||
		{ cat "$TMP/$layout.frames"; fail "$layout: sym_hot_a / sym_hot_b not named"; }
	! grep -Eq '^libsym\.so[+!]' "$TMP/$layout.frames" ||
		{ grep '^libsym' "$TMP/$layout.frames"; fail "$layout: unnamed libsym.so frames left"; }
	pass "$layout layout: debug file fetched from $SRV_URL, sym_hot_a and sym_hot_b named"
	stop "$SRV_PID" "$pid"
done

# The server is down: counted, frames grouped by function (one name per FDE), exit 0.
start_app --pid-line --timeout 30 "$TMP/p-down.out" "$B/symprog" 30
pid=$APP_PID
t0=$(date +%s)
record down.pb.gz -p "$pid" -d 2 --symbol-server http://127.0.0.1:1 --symbol-cache "$TMP/cache-down"
t1=$(date +%s)
grep -Eq 'symbol servers \(1\): 1 debug files asked, 0 from the cache, 0 fetched \(0.0 MiB\), 0 not found, 1 failed' "$TMP/down.txt" ||
	{ cat "$TMP/down.txt"; fail "server down: the failure is not counted"; }
grep -q 'last error: http://127.0.0.1:1' "$TMP/down.txt" || fail "server down: no last error named"
le $((t1 - t0)) 10 || fail "server down: record took $((t1 - t0)) s for -d 2"
decode "$TMP/down.pb.gz"
frames "$TMP/down.json" "$pid" > "$TMP/down.frames"
grep -E '^libsym\.so' "$TMP/down.frames" | sort > "$TMP/down.libsym"
[ -s "$TMP/down.libsym" ] || { cat "$TMP/down.frames"; fail "no libsym.so frames"; }
! grep -q '^libsym\.so+' "$TMP/down.libsym" || { cat "$TMP/down.libsym"; fail "libsym.so+0x frames: not grouped by function"; }
while read -r name; do
	start=${name#libsym.so!0x}
	start=$(printf '%016x' "0x$start")
	grep -q "^$start " "$TMP/funcs.txt" || fail "$name: not the start of a function of the debug file"
	note "$name = $(awk -v s="$start" '$1 == s { print $2 }' "$TMP/funcs.txt")"
done < "$TMP/down.libsym"
hot_a=$(awk '$2 == "sym_hot_a" { print $1 }' "$TMP/funcs.txt" | sed 's/^0*//')
grep -qx "libsym.so!0x$hot_a" "$TMP/down.libsym" || { cat "$TMP/down.libsym"; fail "sym_hot_a not seen as libsym.so!0x$hot_a"; }
pass "server down: 1 failure counted, exit 0 in $((t1 - t0)) s, $(wc -l < "$TMP/down.libsym") libsym.so frames, each one function start"
stop "$pid"

# A server that never answers: record waits for it at most RECORD_SYMBOL_WAIT_MS (5 s) after its
# window, and none of its programs runs meanwhile, the off-CPU ones included: past the window the
# node's threads pay nothing, and no long block goes to a ring nobody drains.
spawn "$TMP/silent.log" python3 -c '
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print("port", s.getsockname()[1], flush=True)
time.sleep(600)'
SILENT_PID=$SPAWNED
wait_for_line "$TMP/silent.log" '^port ' 10
port=$(awk '/^port / { print $2; exit }' "$TMP/silent.log")
start_app --pid-line --timeout 30 "$TMP/p-silent.out" "$B/symprog" 30
pid=$APP_PID
spawn "$TMP/silent.txt" "$SPANPROF" record -p "$pid" -d 1 --off-cpu -o "$TMP/silent.pb.gz" \
	--symbol-server "http://127.0.0.1:$port" --symbol-cache "$TMP/cache-silent"
REC_PID=$SPAWNED
wait_for_line "$TMP/silent.txt" 'waiting up to [0-9]* s for debug files' 15
# The programs attached now, by name (bpftool's links and programs, joined).
attached=$(python3 -c '
import json, subprocess
run = lambda *a: json.loads(subprocess.run(["bpftool", "-j", *a], capture_output=True, check=True).stdout or "[]")
names = {p["id"]: p.get("name", "") for p in run("prog", "show")}
print(" ".join(sorted(names.get(l.get("prog_id"), "") for l in run("link", "show"))))')
note "attached while record waits: $attached"
kill -0 "$REC_PID" 2> /dev/null || fail "record ended before its programs could be looked at"
for prog in sample offcpu_switch offcpu_resume offcpu_exit; do
	[[ " $attached " != *" $prog "* ]] ||
		fail "$prog still attached after the window, while record waits for the symbol server ($attached)"
done
wait "$REC_PID" || fail "record failed with a silent symbol server: $(tail -3 "$TMP/silent.txt")"
pass "a silent symbol server: record waited after its window with none of its programs attached"
kill "$SILENT_PID" 2> /dev/null
stop "$pid"

# A container's binary (no build id) with a .gnu_debuglink whose file exists only on the host,
# at the path the library has inside the container: never used, the refusal counted and named.
HL=$TMP/hl	# the same path inside the root and on the host
STAGE=$TMP/stage
R=$TMP/root
mkdir -p "$HL" "$STAGE$HL" "$R"
cc -O1 -g -fno-omit-frame-pointer -fPIC -shared -Wl,--build-id=none -o "$TMP/libdl_full.so" "$SRC/symlib.c"
objcopy --only-keep-debug "$TMP/libdl_full.so" "$HL/libsym.so.debug"	# the host-only file
strip --strip-all -o "$STAGE$HL/libsym.so" "$TMP/libdl_full.so"
objcopy --add-gnu-debuglink="$HL/libsym.so.debug" "$STAGE$HL/libsym.so"
cc -O1 -fno-omit-frame-pointer -o "$STAGE$HL/symprog" "$SRC/symprog.c" -L"$STAGE$HL" -lsym -Wl,-rpath,"$HL"
for f in $(ldd "$STAGE$HL/symprog" | grep -o '/[^ ]*' | grep -v "$HL"); do
	mkdir -p "$STAGE$(dirname "$f")"
	cp -L "$f" "$STAGE$f"
done
readelf -n "$STAGE$HL/libsym.so" | grep -q 'Build ID' && fail "libsym.so in the root has a build id: not the case"
# The root is a tmpfs made the root of the container's own mount namespace (pivot_root, as a
# container runtime does): the host sees an empty $R, and /proc/<pid>/maps shows the library at
# its path inside the root. The old root stays mounted at /.old inside (nothing there to unmount
# it with); the debug file is not at its path there.
start_app --pid-line --timeout 30 "$TMP/p-root.out" unshare --mount --propagation private sh -c '
	mount -t tmpfs tmpfs "$1" && cp -a "$2/." "$1/" && mkdir "$1/.old" && cd "$1" &&
	pivot_root . .old && cd / && exec "$3/symprog" 30' sh "$R" "$STAGE" "$HL"
pid=$APP_PID
register "$pid"
grep -q " $HL/libsym.so\$" "/proc/$pid/maps" || { cat "/proc/$pid/maps"; fail "the library is not at $HL/libsym.so in the maps"; }
record root.pb.gz -p "$pid" -d 2
grep -A4 'debug files refused' "$TMP/root.txt" || true
grep -Eq 'debug files refused \(outside the process.s root, no matching build id\): [1-9]' "$TMP/root.txt" ||
	{ cat "$TMP/root.txt"; fail "the host's debug file was not refused (or not counted)"; }
grep -q "$HL/libsym.so (pid $pid): .*$HL/libsym.so.debug" "$TMP/root.txt" ||
	{ cat "$TMP/root.txt"; fail "the refusal does not name the binary and the host file"; }
decode "$TMP/root.pb.gz"
frames "$TMP/root.json" "$pid" > "$TMP/root.frames"
! grep -q '^sym_hot' "$TMP/root.frames" || fail "the container's frames were named from the host's debug file"
grep -q '^libsym\.so!0x' "$TMP/root.frames" || { cat "$TMP/root.frames"; fail "no libsym.so!0x frames"; }
pass "container binary's debuglink to a host-only file: refused, counted, named; frames stay libsym.so!0x..."
