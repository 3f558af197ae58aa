#!/usr/bin/env bash
# bench-soak.sh: the agent under node churn for an hour: does anything grow, is any window or
# sample lost? `spanprof agent` (windows to a directory, /metrics on loopback, no Pyroscope) with
# N light .NET processes (SpanLoop with the hook: spans, DUTY % of one CPU each). Every CHURN_S
# seconds one process exits and a new one starts; every ROLLOUT_MIN minutes ROLLOUT_N restart at
# once (a rollout). Pids are reused as they come (counted). Every SAMPLE_S seconds a CSV row:
# the agent's RSS, open fds, CPU seconds, windows written, and its sample accounting from /metrics.
#
#   scripts/bench-soak.sh                       # 60 minutes, N=50 (the issue's run)
#   DURATION_MIN=10 N=50 scripts/bench-soak.sh  # a shorter one
#   OUT=/tmp/soak scripts/bench-soak.sh         # keep the data there (default: a new dir in /tmp)
#
# Settings (environment): DURATION_MIN (60), N (50), CHURN_S (5), ROLLOUT_MIN (10), ROLLOUT_N (20),
#   SAMPLE_S (60), DUTY (1: % of one CPU per process), HZ (19), INTERVAL (15: window seconds),
#   SKIP_MIN (minutes left out of the trend: 10, or DURATION_MIN/5 for runs under 30 minutes),
#   AGENT_ARGS (more agent options), BUILD (build).
# Output in OUT: soak.csv (one row per SAMPLE_S), summary.txt (the figures and the bars),
# soak.svg (RSS, fds and CPU per minute), agent.log. The bars print PASS/FAIL; the script exits
# non-zero only when the run itself failed.
set -euo pipefail
cd "$(dirname "$0")/.."
BL_NAME=bench-soak
. scripts/bench-lib.sh
DURATION_MIN=${DURATION_MIN:-60}
N=${N:-50}
CHURN_S=${CHURN_S:-5}
ROLLOUT_MIN=${ROLLOUT_MIN:-10}
ROLLOUT_N=${ROLLOUT_N:-20}
SAMPLE_S=${SAMPLE_S:-60}
DUTY=${DUTY:-1}
HZ=${HZ:-19}
INTERVAL=${INTERVAL:-15}
if [ -z "${SKIP_MIN:-}" ]; then
	SKIP_MIN=10
	[ "$DURATION_MIN" -ge 30 ] || SKIP_MIN=$(( DURATION_MIN / 5 > 0 ? DURATION_MIN / 5 : 1 ))
fi
OUT=${OUT:-$(mktemp -d /tmp/bench-soak.XXXXXX)}
mkdir -p "$OUT"
bl_need "$SPANPROF" "$LOOP_DLL" "$HOOK_DLL"
bl_init
WIN=$OUT/windows
rm -rf "$WIN"

declare -A SLOT_PID=() SEEN=()
STARTS=0 REUSED=0 EXITS=0
# start_slot I: a new process in slot I (services soak-0..4: pods of five deployments).
start_slot() {
	DOTNET_STARTUP_HOOKS=$HOOK_DLL OTEL_SERVICE_NAME="soak-$(($1 % 5))" \
		dotnet "$LOOP_DLL" --workers 1 --chunk-us 2000 --duty "$DUTY" --duration 86400 > /dev/null 2>&1 &
	local p=$!
	SLOT_PID[$1]=$p
	STARTS=$((STARTS + 1))
	[ -z "${SEEN[$p]:-}" ] || REUSED=$((REUSED + 1))
	SEEN[$p]=1
}
# stop_slots I...: those processes exit (SIGTERM, bounded wait), their perf maps go (as a pod's /tmp does).
stop_slots() {
	local i pids=()
	for i; do pids+=("${SLOT_PID[$i]}"); done
	bl_stop "${pids[@]}"
	for i; do unset "SLOT_PID[$i]"; done
	EXITS=$((EXITS + $#))
}
BL_AT_EXIT='[ ${#SLOT_PID[@]} = 0 ] || bl_stop "${SLOT_PID[@]}"'

bl_say "$(bl_machine)"
bl_say "N=$N SpanLoop (hook, ${DUTY}% of a CPU each), one restart every ${CHURN_S}s, $ROLLOUT_N at once every ${ROLLOUT_MIN} min; agent at $HZ Hz, windows of ${INTERVAL}s; ${DURATION_MIN} min; out $OUT"
for i in $(seq 0 $((N - 1))); do start_slot "$i"; done
sleep 10	# the processes up before the agent: it starts on a busy node
# shellcheck disable=SC2086
bl_start_agent "$OUT/agent.log" -F "$HZ" --interval "$INTERVAL" --output-dir "$WIN" ${AGENT_ARGS:-}
t0=$(date +%s)

echo "minute,t_s,rss_kib,fds,cpu_s,windows_built,window_files,export_sent,export_failed,export_dropped,taken,sent,lost_ringbuf,lost_scratch,received,exported,not_profiled,lost_other,dotnet_procs,span_tables,pruned,starts,exits,pids_reused" > "$OUT/soak.csv"
sample() {
	local m=$OUT/metrics.txt t=$(($(date +%s) - t0)) files
	bl_scrape "$m"
	files=$(find "$WIN" -name '*.pb.gz' 2> /dev/null | wc -l || true)
	echo "$(awk -v t="$t" 'BEGIN { printf "%.2f", t / 60 }'),$t,$(bl_rss "$AGENT_PID"),$(bl_fds "$AGENT_PID"),$(bl_cpu "$AGENT_PID"),$(bl_metric "$m" spanprof_windows_total),$files,$(bl_metric "$m" spanprof_export_sent_total),$(bl_metric "$m" spanprof_export_failed_total),$(bl_metric "$m" spanprof_export_dropped_total),$(bl_metric "$m" spanprof_sampler_events_total 'outcome="samples"'),$(bl_metric "$m" spanprof_sampler_events_total 'outcome="sent"'),$(bl_metric "$m" spanprof_samples_lost_total 'cause="ringbuf_full"'),$(bl_metric "$m" spanprof_samples_lost_total 'cause="scratch"'),$(bl_metric "$m" spanprof_samples_received_total),$(bl_metric "$m" spanprof_window_samples_total),$(bl_metric "$m" spanprof_samples_not_target_total),$(( $(bl_metric "$m" spanprof_samples_lost_total) - $(bl_metric "$m" spanprof_samples_lost_total 'cause="ringbuf_full"') - $(bl_metric "$m" spanprof_samples_lost_total 'cause="scratch"') )),$(bl_metric "$m" spanprof_processes 'kind="dotnet"'),$(bl_metric "$m" spanprof_processes 'kind="span_table"'),$(bl_metric "$m" spanprof_processes_pruned_total),$STARTS,$EXITS,$REUSED" >> "$OUT/soak.csv"
}

end=$((t0 + DURATION_MIN * 60))
next_sample=$((t0 + 5)) next_churn=$((t0 + CHURN_S)) next_rollout=$((t0 + ROLLOUT_MIN * 60)) churn=0
while :; do
	now=$(date +%s)
	[ "$now" -lt "$end" ] || break
	bl_alive "$AGENT_PID" || { tail -20 "$OUT/agent.log" >&2; bl_die "the agent exited"; }
	if [ "$now" -ge "$next_sample" ]; then
		sample
		tail -n 1 "$OUT/soak.csv" | awk -F, '{ printf "bench-soak: %6.1f min  RSS %.1f MiB  fds %d  CPU %.1f s  windows %d  taken %d exported %d  .NET %d  starts %d  pids reused %d\n", $1, $3 / 1024, $4, $5, $6, $11, $16, $19, $22, $24 }'
		next_sample=$((next_sample + SAMPLE_S))
	fi
	if [ "$now" -ge "$next_rollout" ]; then
		slots=()
		for i in $(seq 0 $((ROLLOUT_N - 1))); do slots+=($(((churn + i) % N))); done
		stop_slots "${slots[@]}"
		for i in "${slots[@]}"; do start_slot "$i"; done
		churn=$((churn + ROLLOUT_N)) next_rollout=$((next_rollout + ROLLOUT_MIN * 60))
		bl_say "rollout: $ROLLOUT_N restarted at $(((now - t0) / 60)) min"
	elif [ "$now" -ge "$next_churn" ]; then
		i=$((churn % N))
		stop_slots "$i"
		start_slot "$i"
		churn=$((churn + 1)) next_churn=$((now + CHURN_S))
	fi
	sleep 0.5
done
sample
bl_stop -t 30 "$AGENT_PID"
stopped=$(grep 'agent stopped' "$OUT/agent.log" || true)
bl_stop "${SLOT_PID[@]}"
SLOT_PID=()
bl_say "agent: $stopped"
python3 scripts/bench-soak-report.py --dir "$OUT" --interval "$INTERVAL" --skip-min "$SKIP_MIN" \
	--rollout-min "$ROLLOUT_MIN" --stopped "$stopped" --title "N=$N, ${DURATION_MIN} min, $(nproc) CPUs" | tee "$OUT/summary.txt"
bl_say "data in $OUT (soak.csv, summary.txt, soak.svg, agent.log)"
