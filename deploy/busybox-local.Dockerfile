# deploy/busybox-local.Dockerfile: a busybox image (~2 MB) made from Debian's busybox-static, the base
# of the hook-only image (hook.Dockerfile's HOOK_BASE_IMAGE) where docker.io cannot be reached.
# deploy/build-local.sh `hook` builds it as localhost/busybox:local from the local bookworm base:
#   podman build --isolation=chroot --build-arg BASE_IMAGE=localhost/bookworm:base \
#       -t localhost/busybox:local -f deploy/busybox-local.Dockerfile deploy
ARG BASE_IMAGE=localhost/bookworm:base
FROM ${BASE_IMAGE} AS busybox
ARG DEBIAN_FRONTEND=noninteractive
# A static binary: the image has no libc. Its applets as links, as in the official busybox image.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends busybox-static \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /rootfs/bin /rootfs/tmp \
 && cp /bin/busybox /rootfs/bin/busybox \
 && for a in $(/rootfs/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "/rootfs/bin/$a"; done \
 && chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=busybox /rootfs/ /
ENV PATH=/bin
CMD ["sh"]
