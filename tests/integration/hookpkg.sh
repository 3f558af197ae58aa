#!/usr/bin/env bash
# hookpkg.sh: the hook as a new user gets it (issue 10). A fresh `dotnet new console` app adds the
# SpanProf.Hook package from $BUILD/nuget (`make pack`), uses SpanProf.Label and an Activity and
# nothing else, and its labels and spans are in the profile: with the package alone (its startup
# hook starts before Main), and with DOTNET_STARTUP_HOOKS=SpanProf.Hook.dll on top (of the same and
# of another version: one assembly, one table). Then an app with no reference, published
# self-contained on the .NET 8 and 9 runtime packs (and framework-dependent on the installed 10),
# gets span labels from DOTNET_STARTUP_HOOKS alone; and a runtime the hook cannot serve
# (simulated: SPANPROF_HOOK_FAULT=runtime, no .NET 6/7 runtime pack is served here) gets one
# stderr line and runs on.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet node
VERSION=$(sed -n 's:.*<Version>\(.*\)</Version>.*:\1:p' "$ROOT/hook/Directory.Build.props")
PKG=$BUILD/nuget/SpanProf.Hook.$VERSION.nupkg
need_built "$SPANPROF" "$HOOK" "$PKG"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
unset DOTNET_STARTUP_HOOKS SPANPROF_HOOK_FAULT SPANPROF_HOOK_DISABLE SPANPROF_HOOK_QUIET

# The work both apps do: CPU inside spans. LabelApp adds a label scope inside each span.
burn_src() {
	cat <<'EOF'
static long Burn(int k) { long x = 1; for (int i = 0; i < k; i++) x = x * 31 + (i ^ (x >> 7)); return x; }
EOF
}

# ---- 1. a fresh app with the package --------------------------------------------------------
note "== fresh app + package SpanProf.Hook $VERSION"
(cd "$TMP" && dotnet new console -o LabelApp -n LabelApp > "$TMP/new.log" 2>&1) ||
	{ cat "$TMP/new.log"; fail "dotnet new console"; }
cat > "$TMP/LabelApp/Program.cs" <<EOF
using System;
using System.Diagnostics;
using System.Linq;

// SpanProf.Label from the package and nothing else of it; new Activity(...).Start() is the span.
double seconds = args.Length > 0 ? double.Parse(args[0], System.Globalization.CultureInfo.InvariantCulture) : 6;
Console.WriteLine(\$"ready {Environment.ProcessId} runtime={Environment.Version}");
var sw = Stopwatch.StartNew();
long n = 0;
while (sw.Elapsed.TotalSeconds < seconds)
{
    using Activity span = new Activity("pkg-job").Start();
    using (new SpanProf.Label("tenant", "acme"))
        n += Burn(300_000);
}
var hooks = AppDomain.CurrentDomain.GetAssemblies().Where(a => a.GetName().Name!.StartsWith("SpanProf.Hook"))
    .Select(a => a.GetName().Name + "@" + a.Location);
Console.WriteLine(\$"hook-assemblies {string.Join(",", hooks)}");
Console.WriteLine(\$"done {n & 1}");
$(burn_src)
EOF
# Restored into a packages folder of its own, so no older SpanProf.Hook $VERSION cached in the
# user's folder can stand in for the one just packed. The package has no dependencies and a
# net10.0 console app needs no other package: the local folder is the only source.
(cd "$TMP/LabelApp" &&
	NUGET_PACKAGES=$TMP/packages dotnet add package SpanProf.Hook --version "$VERSION" --source "$BUILD/nuget" &&
	NUGET_PACKAGES=$TMP/packages dotnet build -c Release -o "$TMP/LabelApp/out" -nologo -v q) > "$TMP/add.log" 2>&1 ||
	{ cat "$TMP/add.log"; fail "dotnet add package SpanProf.Hook --source $BUILD/nuget, or the build"; }
grep -q "<PackageReference Include=\"SpanProf.Hook\" Version=\"$VERSION\"" "$TMP/LabelApp/LabelApp.csproj" ||
	fail "no PackageReference in LabelApp.csproj: $(cat "$TMP/LabelApp/LabelApp.csproj")"
grep -q '"STARTUP_HOOKS": "SpanProf.Hook"' "$TMP/LabelApp/out/LabelApp.runtimeconfig.json" ||
	fail "the package did not add its startup hook: $(cat "$TMP/LabelApp/out/LabelApp.runtimeconfig.json")"
[ -f "$TMP/LabelApp/out/SpanProf.Hook.dll" ] || fail "SpanProf.Hook.dll not copied to the app"
pass "dotnet add package SpanProf.Hook from $BUILD/nuget: a PackageReference, the startup hook in runtimeconfig.json"

# spans_in PROFILE PID LEAF_RE: {"total": samples of PID, "leaf": those in LEAF_RE, "span": leaf
# samples with a 16-hex span_id and 32-hex trace_id, "named": ... whose span_name is the wanted one,
# "tenant": ... with tenant=acme}
spans_in() {
	node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const pid = process.argv[2], leaf = new RegExp(process.argv[3]), name = process.argv[4];
const n = (s) => Number(s.values[0]);
let total = 0, inleaf = 0, span = 0, named = 0, tenant = 0;
for (const s of p.samples) {
  if (s.labels.pid !== pid) continue;
  total += n(s);
  if (!s.stack.some((f) => leaf.test(f))) continue;
  inleaf += n(s);
  const l = s.labels;
  if (/^[0-9a-f]{16}$/.test(l.span_id || "") && /^[0-9a-f]{32}$/.test(l.trace_id || "") && l.span_id !== "0000000000000000") span += n(s);
  if (l.span_name === name) named += n(s);
  if (l.tenant === "acme") tenant += n(s);
}
console.log(JSON.stringify({ total, leaf: inleaf, span, named, tenant }));' "$1" "$2" "$3" "$4"
}

# profile_app NAME SECS ENV... -- CMD...: CMD (which prints "ready PID runtime=V" first) runs,
# `spanprof record -p PID -d SECS` profiles it, then it must finish with exit code 0. Leaves
# $TMP/NAME.{out,err} (the app), $TMP/NAME.txt (the report), $TMP/NAME.json (the profile), and
# APP_PID. NAME has no dot (lib.sh's record names the report after the part before the first). The app's stderr must be empty unless ALLOW_STDERR is set.
profile_app() {
	local name=$1 secs=$2 envs=() rc=0
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" "$@" > "$TMP/$name.out" 2> "$TMP/$name.err" &
	APP_PID=$!
	register "$APP_PID"
	wait_for_line "$TMP/$name.out" '^ready ' 60
	record "$name.pb.gz" -p "$APP_PID" -d "$secs"
	wait "$APP_PID" || rc=$?
	[ "$rc" = 0 ] || { cat "$TMP/$name.out" "$TMP/$name.err"; fail "$name: the app exited with $rc"; }
	grep -q '^done' "$TMP/$name.out" || fail "$name: the app did not finish"
	if [ -z "${ALLOW_STDERR:-}" ] && [ -s "$TMP/$name.err" ]; then fail "$name: stderr: $(cat "$TMP/$name.err")"; fi
	decode "$TMP/$name.pb.gz"
}

# labelled NAME SPAN_NAME [tenant]: the report found pid's span table, and nearly every sample in
# Burn carries a span (and the span name, and tenant=acme).
labelled() {
	local name=$1 want=$2 r
	grep -q "^  \.NET pid $APP_PID .*span table v1" "$TMP/$name.txt" ||
		{ cat "$TMP/$name.txt"; fail "$name: no 'span table v1' for pid $APP_PID in the report"; }
	r=$(spans_in "$TMP/$name.json" "$APP_PID" 'Burn' "$want")
	note "$name: $r"
	[ "$(field "$r" leaf)" -ge 50 ] || fail "$name: only $(field "$r" leaf) samples in Burn"
	ge "$(field "$r" "span / $(field "$r" leaf)")" 0.95 || fail "$name: span labels on $(field "$r" span) of $(field "$r" leaf) samples in Burn"
	ge "$(field "$r" "named / $(field "$r" leaf)")" 0.95 || fail "$name: span_name $want on $(field "$r" named) of $(field "$r" leaf)"
	if [ "${3:-}" = tenant ]; then
		ge "$(field "$r" "tenant / $(field "$r" leaf)")" 0.95 || fail "$name: tenant=acme on $(field "$r" tenant) of $(field "$r" leaf)"
	fi
}

one_hook_assembly() { # NAME: exactly one SpanProf.Hook assembly, the app's copy
	local line
	line=$(grep '^hook-assemblies ' "$TMP/$1.out")
	[ "$line" = "hook-assemblies SpanProf.Hook@$TMP/LabelApp/out/SpanProf.Hook.dll" ] || fail "$1: $line"
}

APP=$TMP/LabelApp/out/LabelApp.dll
ALLOW_STDERR=1 profile_app pkg 4 SPANPROF_HOOK_VERBOSE=1 -- dotnet "$APP" 6
grep -q '^spanprof-hook: table at .*(startup hook)$' "$TMP/pkg.err" ||
	fail "pkg: the hook was not started by the package's startup hook: $(cat "$TMP/pkg.err")"
# Verbose lines only (table, process context): no warning.
if grep -v -e '^spanprof-hook: table at ' -e '^spanprof-hook: process context at ' "$TMP/pkg.err"; then fail "pkg: unexpected stderr"; fi
labelled pkg pkg-job tenant
one_hook_assembly pkg
pass "package only: spans and the tenant label in the profile, the hook started before Main"

# The package and DOTNET_STARTUP_HOOKS at once: the runtime binds the startup hook to the app's
# copy (same AssemblyVersion, 1.0.0.0, whatever the package version): one assembly, one table.
dotnet build "$ROOT/hook/SpanProf.Hook.csproj" -c Release -o "$TMP/hook-9.9" -p:Version=9.9.0 \
	-p:SpanProfBuildDir="$TMP/hookbuild" -nologo -v q > "$TMP/hook99.log" 2>&1 ||
	{ cat "$TMP/hook99.log"; fail "building SpanProf.Hook 9.9.0"; }
profile_app pkg-hook99 4 DOTNET_STARTUP_HOOKS="$TMP/hook-9.9/SpanProf.Hook.dll" -- dotnet "$APP" 6
labelled pkg-hook99 pkg-job tenant
one_hook_assembly pkg-hook99
[ "$(grep -c '^  \.NET pid '"$APP_PID"' .*span table v1' "$TMP/pkg-hook99.txt")" = 1 ] || fail "pkg-hook99: span tables: $(grep 'span table' "$TMP/pkg-hook99.txt")"
pass "package $VERSION + DOTNET_STARTUP_HOOKS of SpanProf.Hook 9.9.0: one assembly (the app's), one table, labels"
env DOTNET_STARTUP_HOOKS="$HOOK" dotnet "$APP" 2 > "$TMP/pkg-hook.out" 2> "$TMP/pkg-hook.err" || fail "pkg-hook: exit code $?"
[ ! -s "$TMP/pkg-hook.err" ] || fail "pkg-hook: stderr: $(cat "$TMP/pkg-hook.err")"
one_hook_assembly pkg-hook
pass "package + DOTNET_STARTUP_HOOKS=$HOOK (same version): one assembly, runs clean"

# ---- 2. the startup hook alone on .NET 8, 9 (self-contained, runtime packs) and 10 --------------
note "== DOTNET_STARTUP_HOOKS on .NET 8, 9 and 10"
(cd "$TMP" && dotnet new console -o Plain -n Plain > "$TMP/new2.log" 2>&1) || { cat "$TMP/new2.log"; fail "dotnet new console"; }
sed -i 's:<TargetFramework>net10.0</TargetFramework>:<TargetFrameworks>net8.0;net9.0;net10.0</TargetFrameworks>:' "$TMP/Plain/Plain.csproj"
grep -q '<TargetFrameworks>net8.0;net9.0;net10.0</TargetFrameworks>' "$TMP/Plain/Plain.csproj" || fail "Plain.csproj: $(cat "$TMP/Plain/Plain.csproj")"
cat > "$TMP/Plain/Program.cs" <<EOF
using System;
using System.Diagnostics;

// No reference to the hook: spans only, new Activity(...).Start().
double seconds = args.Length > 0 ? double.Parse(args[0], System.Globalization.CultureInfo.InvariantCulture) : 6;
Console.WriteLine(\$"ready {Environment.ProcessId} runtime={Environment.Version}");
var sw = Stopwatch.StartNew();
long n = 0;
while (sw.Elapsed.TotalSeconds < seconds)
{
    using Activity span = new Activity("plain-job").Start();
    n += Burn(300_000);
}
Console.WriteLine(\$"done {n & 1}");
$(burn_src)
EOF
for fw in net8.0 net9.0; do
	(cd "$TMP/Plain" && dotnet publish -c Release -f "$fw" -r linux-x64 --self-contained -o "$TMP/plain-$fw" -nologo -v q) \
		> "$TMP/publish-$fw.log" 2>&1 || { cat "$TMP/publish-$fw.log"; fail "dotnet publish -f $fw --self-contained"; }
done
(cd "$TMP/Plain" && dotnet build -c Release -f net10.0 -o "$TMP/plain-net10.0" -nologo -v q) > "$TMP/build10.log" 2>&1 ||
	{ cat "$TMP/build10.log"; fail "dotnet build -f net10.0"; }
for fw in net8.0 net9.0 net10.0; do
	major=${fw#net}
	major=${major%.0}
	if [ "$fw" = net10.0 ]; then cmd=(dotnet "$TMP/plain-$fw/Plain.dll" 6); else cmd=("$TMP/plain-$fw/Plain" 6); fi
	profile_app "plain$major" 4 DOTNET_STARTUP_HOOKS="$HOOK" -- "${cmd[@]}"
	runtime=$(sed -n 's/^ready [0-9]* runtime=//p' "$TMP/plain$major.out")
	[ "${runtime%%.*}" = "$major" ] || fail "plain$major: ran on .NET $runtime"
	labelled "plain$major" plain-job
	pass ".NET $runtime ($([ "$fw" = net10.0 ] && echo installed || echo self-contained)): DOTNET_STARTUP_HOOKS=SpanProf.Hook.dll, span labels in the profile"
	# .NET frames on this runtime: perf maps turned on by spanprof (the run above), and on from
	# the start; what the runtime wrote is in its .NET line (perfmap/README.md keeps the table).
	for mode in late start; do
		if [ $mode = start ]; then profile_app "pm$major" 4 DOTNET_PerfMapEnabled=1 -- "${cmd[@]}"; n=pm$major; else n=plain$major; fi
		r=$(query dotnet "$TMP/$n.json" --pid "$APP_PID")
		note "$n (.NET $runtime, perf maps $mode): $(node -pe "const r=($r); 'leaves ' + r.leaf_frac.toFixed(4) + ', frames ' + r.frame_frac.toFixed(4) + ' named'"); $(grep -o "pid $APP_PID ([^)]*): .*code ranges[^;]*\(; jitdump stopped[^;]*\)\?" "$TMP/$n.txt" | sed 's/^pid [0-9]* ([^)]*): //')"
		ge "$(field "$r" leaf_frac)" 0.95 || fail "$n: .NET leaves named in $(field "$r" leaf_frac) of samples"
		ge "$(field "$r" frame_frac)" 0.99 || fail "$n: .NET frames named: $(field "$r" frame_frac)"
	done
	pass ".NET $runtime: .NET frames named with perf maps on from the start and turned on by spanprof"
done

# ---- 3. a runtime the hook cannot serve -------------------------------------------------------
# Simulated (SPANPROF_HOOK_FAULT=runtime: the hook takes the runtime for 7.0.20), on .NET 8: this
# machine's NuGet copy serves no .NET 6 or 7 runtime pack.
# (The hook's test build: the shipped one does not read SPANPROF_HOOK_FAULT.)
need_built "$TESTHOOK"
ALLOW_STDERR=1 profile_app refused 2 DOTNET_STARTUP_HOOKS="$TESTHOOK" SPANPROF_HOOK_FAULT=runtime -- "$TMP/plain-net8.0/Plain" 3
[ "$(wc -l < "$TMP/refused.err")" = 1 ] && grep -qx 'spanprof-hook: disabled: .NET 7.0.20 is not supported (the hook needs .NET 8 or later); the app runs without span labels' "$TMP/refused.err" ||
	fail "refused: stderr: $(cat "$TMP/refused.err")"
grep -q "^  \.NET pid $APP_PID .*no span table" "$TMP/refused.txt" || { cat "$TMP/refused.txt"; fail "refused: a span table was found"; }
r=$(spans_in "$TMP/refused.json" "$APP_PID" 'Burn' plain-job)
[ "$(field "$r" leaf)" -ge 20 ] && [ "$(field "$r" span)" = 0 ] || fail "refused: $r"
pass "unsupported runtime (simulated): one stderr line, no table, the app ran to the end"
