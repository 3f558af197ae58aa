#!/usr/bin/env bash
# docs.sh: the reference docs say what the build is. Every long option of `spanprof record --help`
# is in docs/cli.md and every one of `spanprof agent --help` in docs/agent.md, and neither doc
# names an option its command does not have. The hook's target framework and DLL names that
# hook/README.md, deploy/ and the README give are those of hook/*.csproj and of what `make hook
# pack` wrote to $BUILD, and DOTNET_STARTUP_HOOKS is only ever given SpanProf.Hook.dll.
# Needs the build only (no root, no BPF).
. "$(dirname "$0")/lib.sh"

[ -x "$SPANPROF" ] || fail "no $SPANPROF: run make first"

# long_opts FILE: every --long-option token in FILE, one per line, sorted and unique. Lines of a
# fenced code block that do not run spanprof are left out (other tools' options: go tool pprof,
# dotnet add package).
long_opts() {
	awk '/^```/ { code = !code; next } code && !/spanprof/ { next } { print }' "$1" |
		grep -oE '(^|[^[:alnum:]_-])--[a-z][a-z0-9-]*[a-z0-9]' | sed 's/^[^-]*//' | sort -u
}

# check_doc CMD DOC: the options of `spanprof CMD --help` and those DOC names are the same set.
check_doc() {
	local cmd=$1 doc=$ROOT/$2 missing extra
	"$SPANPROF" "$cmd" --help > "$TMP/$cmd.help" || fail "spanprof $cmd --help failed"
	long_opts "$TMP/$cmd.help" > "$TMP/$cmd.bin"
	long_opts "$doc" > "$TMP/$cmd.doc"
	[ "$(wc -l < "$TMP/$cmd.bin")" -ge 5 ] || fail "spanprof $cmd --help: too few options found ($(wc -l < "$TMP/$cmd.bin"))"
	missing=$(comm -23 "$TMP/$cmd.bin" "$TMP/$cmd.doc" | tr '\n' ' ')
	extra=$(comm -13 "$TMP/$cmd.bin" "$TMP/$cmd.doc" | tr '\n' ' ')
	[ -z "$missing" ] || fail "$2 does not name these options of spanprof $cmd: $missing"
	[ -z "$extra" ] || fail "$2 names options spanprof $cmd does not have: $extra"
	pass "$2 names the $(wc -l < "$TMP/$cmd.bin") long options of spanprof $cmd --help, and no other"
}

check_doc record docs/cli.md
check_doc agent docs/agent.md

# The agent's environment: --help gives each option's variable ("[env SPANPROF_X]", from the
# options table), the variable follows the one scheme (SPANPROF_ and the name in upper case, '-' as
# '_'), and docs/agent.md's options table gives the same variable in its environment column.
awk '/^(  -[A-Za-z], |      )--[a-z]/ { opt = $0; sub(/^ *(-[A-Za-z], )?--/, "", opt); sub(/[ \t].*/, "", opt) }
	match($0, /\[env SPANPROF_[A-Z0-9_]+/) { print opt, substr($0, RSTART + 5, RLENGTH - 5) }' \
	"$TMP/agent.help" | sort > "$TMP/env.bin"
[ "$(wc -l < "$TMP/env.bin")" -ge "$(($(wc -l < "$TMP/agent.bin") - 1))" ] ||
	fail "spanprof agent --help gives a variable for $(wc -l < "$TMP/env.bin") of $(wc -l < "$TMP/agent.bin") options"
while read -r opt var; do
	want=SPANPROF_$(echo "$opt" | tr 'a-z-' 'A-Z_')
	[ "$var" = "$want" ] || fail "spanprof agent --help: --$opt comes from \$$var, not \$$want"
done < "$TMP/env.bin"
sed -n 's/^| `\(-[A-Za-z], \)\{0,1\}--\([a-z0-9-]*\)[^`]*` | `\(SPANPROF_[A-Z0-9_]*\)` | .*/\2 \3/p' \
	"$ROOT/docs/agent.md" | sort > "$TMP/env.doc"
diff -u "$TMP/env.bin" "$TMP/env.doc" > "$TMP/env.diff" ||
	{ cat "$TMP/env.diff"; fail "docs/agent.md's environment column differs from spanprof agent --help (- help, + doc)"; }
pass "docs/agent.md gives the variable of each of the $(wc -l < "$TMP/env.bin") agent options, as --help does"

# ---- the hook: target framework and file names -------------------------------------------------
HOOK_DOCS=(README.md hook/README.md deploy/README.md deploy/Dockerfile deploy/kubernetes/app-patch/*.yaml
	docs/cli.md docs/agent.md docs/architecture.md)
# The hook targets net6.0;net8.0: the first is the startup hook's (the DLL the docs name), the
# second only what a package reference from a .NET 8+ app compiles against.
tfm=$(sed -n 's:.*<TargetFrameworks>\([^;<]*\).*</TargetFrameworks>.*:\1:p' "$ROOT/hook/SpanProf.Hook.csproj")
tfm2=$(sed -n 's:.*<TargetFramework>\(.*\)</TargetFramework>.*:\1:p' "$ROOT/hook/startup/SpanProf.Hook.Startup.csproj")
[[ $tfm =~ ^net[0-9]+\.[0-9]+$ ]] || fail "hook/SpanProf.Hook.csproj: no TargetFramework found"
[ "$tfm" = "$tfm2" ] || fail "the hook's two projects target $tfm and $tfm2"
major=${tfm#net}
major=${major%%.*}

# What the docs say the hook targets: "targets net6.0", "the hook (net6.0)", "the net6.0
# targeting pack", "Microsoft.NETCore.App.Ref 6.0.x".
(cd "$ROOT" && grep -noE "targets? \**net[0-9]+\.[0-9]+|hook \(net[0-9]+\.[0-9]+\)|net[0-9]+\.[0-9]+ targeting pack|Microsoft\.NETCore\.App\.Ref [0-9]+\.[0-9x]+" \
	"${HOOK_DOCS[@]}") > "$TMP/tfm.said" || true
[ -s "$TMP/tfm.said" ] || fail "no doc says what the hook targets (looked in ${HOOK_DOCS[*]})"
wrong=$(grep -vE "net$major\.0|App\.Ref $major\." "$TMP/tfm.said" || true)
[ -z "$wrong" ] || fail "the hook targets $tfm (hook/*.csproj), but: $wrong"
pass "$(wc -l < "$TMP/tfm.said") mentions of the hook's target framework say $tfm"

# Every SpanProf.Hook*.dll a doc names is one the build wrote, and the package's name pattern is
# that of the package the build wrote.
ls "$BUILD"/hook/SpanProf.Hook*.dll > /dev/null 2>&1 || fail "no $BUILD/hook/SpanProf.Hook*.dll: run make hook"
(cd "$ROOT" && grep -ohE 'SpanProf\.Hook[A-Za-z.]*\.dll' "${HOOK_DOCS[@]}") | sort -u > "$TMP/dll.said"
[ -s "$TMP/dll.said" ] || fail "no doc names a hook DLL"
while read -r dll; do
	[ -s "$BUILD/hook/$dll" ] || fail "the docs name $dll, which the build does not produce ($(ls "$BUILD"/hook/SpanProf.Hook*.dll | xargs -n1 basename | tr '\n' ' '))"
done < "$TMP/dll.said"
pass "hook DLLs the docs name are built: $(tr '\n' ' ' < "$TMP/dll.said")"
version=$(sed -n 's:.*<Version>\(.*\)</Version>.*:\1:p' "$ROOT/hook/Directory.Build.props")
[ -s "$BUILD/nuget/SpanProf.Hook.$version.nupkg" ] || fail "no $BUILD/nuget/SpanProf.Hook.$version.nupkg: run make pack"
bad=$( (cd "$ROOT" && grep -noE 'SpanProf\.Hook[A-Za-z.]*\.(<version>|[0-9][0-9.]*)\.nupkg' "${HOOK_DOCS[@]}") |
	grep -vE ':SpanProf\.Hook\.(<version>|'"${version//./\\.}"')\.nupkg$' || true)
[ -z "$bad" ] || fail "the package the build writes is SpanProf.Hook.$version.nupkg, but: $bad"
pass "the package named as the build writes it (SpanProf.Hook.$version.nupkg)"

# DOTNET_STARTUP_HOOKS is given SpanProf.Hook.dll only: SpanProf.Hook.Startup.dll is a test build
# (hook/README.md). The values: `DOTNET_STARTUP_HOOKS=...` in shell, and in YAML the `value:` on
# the line after `name: DOTNET_STARTUP_HOOKS`.
{
	(cd "$ROOT" && grep -ohE 'DOTNET_STARTUP_HOOKS=[^ `]*' "${HOOK_DOCS[@]}")
	(cd "$ROOT" && grep -hA1 'name: DOTNET_STARTUP_HOOKS' "${HOOK_DOCS[@]}") | grep 'value:'
} | grep -oE 'SpanProf\.Hook[A-Za-z.]*\.dll' | sort -u > "$TMP/inject.said"
[ "$(cat "$TMP/inject.said")" = SpanProf.Hook.dll ] ||
	fail "DOTNET_STARTUP_HOOKS is given $(tr '\n' ' ' < "$TMP/inject.said")in the docs: only SpanProf.Hook.dll is for injection"
pass "DOTNET_STARTUP_HOOKS is given SpanProf.Hook.dll only"
