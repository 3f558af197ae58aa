#!/bin/sh
# install-deps.sh: install the Debian packages spanprof builds and tests with. Idempotent:
# does nothing (and needs no network) when everything is already present.
set -eu

PKGS="clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler
      libcmocka-dev libcurl4-openssl-dev libmicrohttpd-dev libdw-dev prometheus linux-perf golang-1.19-go pkg-config make gcc util-linux
      procps libclang-rt-14-dev podman buildah debootstrap libc6-dbg"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done

if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing packages:$missing; run as root: sudo $0" >&2
		exit 2
	fi
	echo "install-deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if ! command -v dotnet >/dev/null 2>&1; then
	echo "install-deps: the .NET SDK (dotnet) is required for the .NET parts; install it first" >&2
	exit 2
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "install-deps: Node.js and npm are required for the pprof-format decoder test" >&2
	exit 2
fi
