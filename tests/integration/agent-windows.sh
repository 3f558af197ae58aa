#!/usr/bin/env bash
# agent-windows.sh: every sample the agent receives lands in exactly one exported window, or in
# a counted loss, wherever in a window SIGTERM falls. Windows of 0.1 s at 199 Hz on a busy native
# process (--all-processes), stopped at 20 points spread over a window: each run's stop line must
# add up (exported = received - not profiled - the losses), and the --output-dir profiles must hold
# exactly the exported samples.
. "$(dirname "$0")/lib.sh"
need_root
need_built "$HOTCHAIN" "$SPANPROF"

start_app --pid-line --timeout 30 "$TMP/hot.out" "$HOTCHAIN" 120

runs=20 bad=0
for i in $(seq $runs); do
	out=$TMP/run$i
	"$SPANPROF" agent --all-processes -F 199 --interval 0.1 --output-dir "$out.d" -v \
		> "$out.agent" 2>&1 &
	agent=$!
	register "$agent"
	wait_for_line "$out.agent" 'agent sampling' 30
	# 0.3 s plus i/20 of a window: the stop falls at every phase of a window, its grace included.
	sleep "$(awk -v i="$i" 'BEGIN { printf "%.3f", 0.3 + i * 0.005 }')"
	kill -TERM "$agent"
	wait "$agent" || { cat "$out.agent"; fail "run $i: agent exited non-zero"; }
	line=$(grep -a 'agent stopped:' "$out.agent") || { cat "$out.agent"; fail "run $i: no stop line"; }
	total=0
	for f in $(find "$out.d" -name '*.pb.gz'); do
		total=$((total + $(pprof_json "$f" | node -pe 'JSON.parse(require("fs").readFileSync(0)).totals[0]')))
	done
	if ! node -e '
		const [line, total] = [process.argv[1], Number(process.argv[2])];
		const m = line.match(/(\d+) samples exported; .*received (\d+), not profiled (\d+), malformed (\d+), out of memory (\d+), unencodable (\d+)(?:, left out (\d+))?/);
		if (!m) { console.log("unparsed: " + line); process.exit(1); }
		const [, exported, received, nt, mal, nomem, unenc, left] = m.map((x) => Number(x || 0));
		const lost = received - nt - mal - nomem - unenc - left;
		if (exported !== lost || total !== exported) {
			console.log(`exported ${exported}, in files ${total}, received ${received} less not profiled and losses ${lost}`);
			process.exit(1);
		}' "$line" "$total"; then
		note "run $i: $line"
		bad=$((bad + 1))
	fi
done
[ $bad -eq 0 ] || fail "$bad of $runs runs lost samples without counting them"
pass "$runs stops at every phase of a window: every received sample exported or counted"
