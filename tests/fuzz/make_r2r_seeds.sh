#!/usr/bin/env bash
# make_r2r_seeds.sh [DIR]: seed corpus for fuzz_r2r (default tests/fuzz/corpus-r2r, not committed):
# small ReadyToRun images of the installed shared framework (a few methods; DispatchProxy and
# ObjectModel have generic instantiations), whole and cut short.
set -euo pipefail
out=${1:-$(dirname "$0")/corpus-r2r}
fw=$(ls -d /usr/share/dotnet/shared/Microsoft.NETCore.App/*/ | tail -1)
mkdir -p "$out"
for dll in System.ComponentModel.dll System.Runtime.CompilerServices.VisualC.dll \
	   System.Reflection.DispatchProxy.dll System.ObjectModel.dll System.Runtime.dll; do
	[ -f "$fw/$dll" ] || continue
	cp "$fw/$dll" "$out/$dll"
	for kib in 1 4 16; do
		head -c $((kib * 1024)) "$fw/$dll" > "$out/$dll.$kib"k
	done
done
echo "make_r2r_seeds: $(ls "$out" | wc -l) seeds in $out"
