#!/usr/bin/env bash
# deploy/build-local.sh: build the spanprof image with podman on a machine that has no Docker
# engine and reaches no container registry (only Debian's and NuGet's package servers).
#
#   deploy/build-local.sh [base|sdk|image|hook|all]     (default all; as root)
#
#   base   localhost/bookworm:base     debootstrap --variant=minbase bookworm, imported; kept
#                                      when it exists (FORCE_BASE=1 rebuilds it), loaded from
#                                      BASE_ARCHIVE (a `podman save` of it, written after each
#                                      debootstrap) when podman's storage lacks it
#   sdk    localhost/dotnet-sdk:local  the host's own .NET SDK on that base, with the host's NuGet
#                                      configuration and CA bundle; rebuilt when the host's SDK
#                                      version changes
#   image  localhost/spanprof:latest   deploy/Dockerfile with those two as BASE_IMAGE and
#                                      DOTNET_SDK_IMAGE (podman's layer cache makes a rebuild of
#                                      unchanged sources take seconds)
#   hook   localhost/spanprof-hook:latest  the hook-only image (init container of application pods):
#                                      deploy/hook.Dockerfile on localhost/busybox:local
#                                      (deploy/busybox-local.Dockerfile: Debian's busybox-static on
#                                      scratch), ~2.3 MB
#
# The images use the host's package sources: its apt sources (when the host runs bookworm, else
# debootstrap's default mirror, or DEBIAN_MIRROR), its NuGet.Config and its CA bundle.
#
# Environment: IMAGE, BASE_IMAGE, SDK_IMAGE, HOOK_IMAGE, BUSYBOX_IMAGE (the names above),
# BASE_ARCHIVE, DEBIAN_MIRROR (debootstrap's mirror), DOTNET_DIR (the host SDK's directory,
# default: where `dotnet` resolves to), NUGET_CONFIG, PODMAN_BUILD_ARGS (extra `podman build`
# arguments), FORCE_BASE=1, FORCE_SDK=1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGE=${IMAGE:-localhost/spanprof:latest}
BASE_IMAGE=${BASE_IMAGE:-localhost/bookworm:base}
SDK_IMAGE=${SDK_IMAGE:-localhost/dotnet-sdk:local}
HOOK_IMAGE=${HOOK_IMAGE:-localhost/spanprof-hook:latest}
BUSYBOX_IMAGE=${BUSYBOX_IMAGE:-localhost/busybox:local}
# `podman save` of the base image, loaded instead of running debootstrap when present.
BASE_ARCHIVE=${BASE_ARCHIVE:-/var/cache/spanprof-build/bookworm-base.tar}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-}
# The build runs as a chroot with the host's namespaces: no OCI runtime, no user namespace
# (the only isolation that works where setrlimit in a new container is refused).
BUILD_ISOLATION=${BUILD_ISOLATION:-chroot}
read -r -a EXTRA <<<"${PODMAN_BUILD_ARGS:-}"

CLEAN=()
trap 'rm -rf "${CLEAN[@]:-/nonexistent}"' EXIT
log() { echo "build-local: $*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap, podman's root storage)"
command -v podman >/dev/null || die "podman missing: apt-get install podman buildah debootstrap"

build_base() {
	if [ "${FORCE_BASE:-0}" != 1 ] && podman image exists "$BASE_IMAGE"; then
		log "$BASE_IMAGE exists: kept (FORCE_BASE=1 rebuilds it)"
		return
	fi
	if [ "${FORCE_BASE:-0}" != 1 ] && [ -r "$BASE_ARCHIVE" ]; then
		log "podman load $BASE_ARCHIVE -> $BASE_IMAGE"
		podman load -q -i "$BASE_ARCHIVE" >/dev/null && podman image exists "$BASE_IMAGE" && return
		log "$BASE_ARCHIVE did not give $BASE_IMAGE: debootstrap instead"
	fi
	command -v debootstrap >/dev/null || die "debootstrap missing: apt-get install debootstrap"
	local dir
	dir=$(mktemp -d /var/tmp/spanprof-bookworm.XXXXXX)
	CLEAN+=("$dir")
	log "debootstrap --variant=minbase bookworm ${DEBIAN_MIRROR:-(default mirror)}"
	# shellcheck disable=SC2086
	debootstrap --variant=minbase bookworm "$dir/root" $DEBIAN_MIRROR >"$dir/log" 2>&1 ||
		{ tail -20 "$dir/log" >&2; die "debootstrap failed"; }
	local apt=$dir/root/etc/apt
	if [ -z "$DEBIAN_MIRROR" ] && grep -qs '^VERSION_CODENAME=bookworm' /etc/os-release &&
		grep -qs bookworm /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources; then
		# The host's own Debian sources (release, updates, security), as the host sees them.
		rm -f "$apt/sources.list"
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources; do
			if [ -s "$f" ]; then cp "$f" "$apt/${f#/etc/apt/}"; fi
		done
	else
		# debootstrap's mirror plus the updates and security suites of the official images.
		local m
		m=$(awk '$1 == "deb" { print $2; exit }' "$apt/sources.list")
		cat >"$apt/sources.list" <<EOF
deb $m bookworm main
deb $m bookworm-updates main
deb ${m%/debian}/debian-security bookworm-security main
EOF
	fi
	# Like debian:bookworm-slim: no package cache, no lists, no recommends.
	printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
		>"$dir/root/etc/apt/apt.conf.d/90spanprof-norecommends"
	rm -rf "$dir/root/var/cache/apt/archives/"*.deb "$dir/root/var/lib/apt/lists/"* \
		"$dir/root/var/log/"*.log "$dir/root/var/log/apt/"*
	log "podman import -> $BASE_IMAGE"
	tar -C "$dir/root" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
		podman import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
	# Kept outside podman's storage too: a reset storage loads it back instead of debootstrapping.
	if mkdir -p "$(dirname "$BASE_ARCHIVE")" 2>/dev/null; then
		podman save -q -o "$BASE_ARCHIVE.tmp" "$BASE_IMAGE" && mv "$BASE_ARCHIVE.tmp" "$BASE_ARCHIVE" ||
			rm -f "$BASE_ARCHIVE.tmp"
	fi
}

build_sdk() {
	local dotnet_dir ver have ctx nuget
	dotnet_dir=${DOTNET_DIR:-$(dirname "$(readlink -f "$(command -v dotnet)")")}
	[ -x "$dotnet_dir/dotnet" ] || die "no .NET SDK found (DOTNET_DIR=$dotnet_dir)"
	ver=$("$dotnet_dir/dotnet" --version)
	have=$(podman image inspect --format '{{ index .Labels "io.spanprof.dotnet-sdk" }}' "$SDK_IMAGE" 2>/dev/null || true)
	if [ "$have" = "$ver" ] && [ "${FORCE_SDK:-0}" != 1 ]; then
		log "$SDK_IMAGE has SDK $ver: kept"
		return
	fi
	ctx=$(mktemp -d /var/tmp/spanprof-sdk.XXXXXX)
	CLEAN+=("$ctx")
	# Hard links: instant, no second copy of ~600 MB on disk (falls back to a copy across devices).
	cp -al "$dotnet_dir" "$ctx/dotnet" 2>/dev/null || cp -a "$dotnet_dir" "$ctx/dotnet"
	# The host's NuGet configuration, if any (else the SDK's default source).
	mkdir "$ctx/nuget"
	nuget=${NUGET_CONFIG:-$HOME/.nuget/NuGet/NuGet.Config}
	if [ -r "$nuget" ]; then cp "$nuget" "$ctx/nuget/NuGet.Config"; fi
	cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$ctx/ca-certificates.crt"
	log "podman build $SDK_IMAGE (SDK $ver from $dotnet_dir)"
	podman build --isolation="$BUILD_ISOLATION" ${EXTRA[@]+"${EXTRA[@]}"} \
		--build-arg BASE_IMAGE="$BASE_IMAGE" \
		--build-arg NUGET_CERT_REVOCATION_MODE="${NUGET_CERT_REVOCATION_MODE:-online}" \
		--label io.spanprof.dotnet-sdk="$ver" \
		-t "$SDK_IMAGE" -f "$ROOT/deploy/sdk-local.Dockerfile" "$ctx"
}

build_image() {
	local version
	version=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
	log "podman build $IMAGE (version $version)"
	podman build --isolation="$BUILD_ISOLATION" ${EXTRA[@]+"${EXTRA[@]}"} \
		--ignorefile "$ROOT/deploy/Dockerfile.dockerignore" \
		--build-arg BASE_IMAGE="$BASE_IMAGE" \
		--build-arg DOTNET_SDK_IMAGE="$SDK_IMAGE" \
		--build-arg VERSION="$version" \
		-t "$IMAGE" -f "$ROOT/deploy/Dockerfile" "$ROOT"
}

build_hook() {
	local version
	version=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
	local ctx
	ctx=$(mktemp -d /var/tmp/spanprof-busybox.XXXXXX)	# empty: the Dockerfile copies nothing in
	CLEAN+=("$ctx")
	log "podman build $BUSYBOX_IMAGE"
	podman build --isolation="$BUILD_ISOLATION" ${EXTRA[@]+"${EXTRA[@]}"} \
		--build-arg BASE_IMAGE="$BASE_IMAGE" \
		-t "$BUSYBOX_IMAGE" -f "$ROOT/deploy/busybox-local.Dockerfile" "$ctx"
	log "podman build $HOOK_IMAGE (version $version)"
	podman build --isolation="$BUILD_ISOLATION" ${EXTRA[@]+"${EXTRA[@]}"} \
		--ignorefile "$ROOT/deploy/hook.Dockerfile.dockerignore" \
		--build-arg DOTNET_SDK_IMAGE="$SDK_IMAGE" \
		--build-arg HOOK_BASE_IMAGE="$BUSYBOX_IMAGE" \
		--build-arg VERSION="$version" \
		-t "$HOOK_IMAGE" -f "$ROOT/deploy/hook.Dockerfile" "$ROOT"
	log "$HOOK_IMAGE: $(podman image inspect --format '{{.Size}}' "$HOOK_IMAGE") bytes"
}

case ${1:-all} in
base) build_base ;;
sdk) build_base; build_sdk ;;
image) build_image ;;
hook) build_hook ;;
all) build_base; build_sdk; build_image; build_hook ;;
*) die "usage: $0 [base|sdk|image|hook|all]" ;;
esac
