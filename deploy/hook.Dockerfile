# deploy/hook.Dockerfile: the hook-only image, a few MB: busybox (for `cp`) and the startup hook DLLs
# in /opt/spanprof/hook/, the same path as in the agent image. Application pods copy them into an
# emptyDir with an init container (deploy/tools/inject-hook.mjs adds it; deploy/README.md).
#
#   docker build -f deploy/hook.Dockerfile -t spanprof-hook .            # from the repository root
#   podman build --isolation=chroot -f deploy/hook.Dockerfile \
#       --ignorefile deploy/hook.Dockerfile.dockerignore -t spanprof-hook .
#   deploy/build-local.sh hook          # without a registry: on busybox-local.Dockerfile (2.28 MB)
#
# Unlike the agent image it needs no BTF kernel and no C toolchain: only the .NET SDK stage.

# Any .NET SDK >= 8 image (the hook targets net6.0: hook/SpanProf.Hook.csproj says why).
ARG DOTNET_SDK_IMAGE=mcr.microsoft.com/dotnet/sdk:10.0
# Anything with a POSIX `cp` at /bin/cp that runs as uid 65532 (busybox: ~4 MB).
ARG HOOK_BASE_IMAGE=docker.io/library/busybox:1.37

# ---- hook: the managed startup hook (the same two builds as deploy/Dockerfile's hook stage and the
# Makefile's $(HOOK_DLL) rule) -----------------------------------------------------------------
FROM ${DOTNET_SDK_IMAGE} AS hook
ENV DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1 \
    DOTNET_CLI_USE_MSBUILD_SERVER=0 MSBUILDDISABLENODEREUSE=1 UseSharedCompilation=false
WORKDIR /src
COPY hook/Directory.Build.props hook/SpanProf.Hook.csproj hook/
COPY hook/startup/SpanProf.Hook.Startup.csproj hook/startup/
RUN dotnet restore hook/SpanProf.Hook.csproj -p:TargetFrameworks=net6.0 \
 && dotnet restore hook/startup/SpanProf.Hook.Startup.csproj
COPY hook/src/ hook/src/
RUN dotnet build hook/SpanProf.Hook.csproj -c Release -p:TargetFrameworks=net6.0 -o /out/hook --no-restore -nologo -v q -clp:NoSummary -nodeReuse:false \
 && dotnet build hook/startup/SpanProf.Hook.Startup.csproj -c Release -o /out/hook --no-restore -nologo -v q -clp:NoSummary -nodeReuse:false \
 && chmod -R a+rX /out/hook \
 && test -s /out/hook/SpanProf.Hook.dll && test -s /out/hook/SpanProf.Hook.Startup.dll

# ---- the image -------------------------------------------------------------------------------
FROM ${HOOK_BASE_IMAGE}
# Readable by any uid: the init container runs as 65532 and copies them into the app's volume.
COPY --from=hook /out/hook/ /opt/spanprof/hook/
ARG VERSION=unknown
LABEL org.opencontainers.image.title="spanprof-hook" \
      org.opencontainers.image.description="spanprof's .NET startup hook (SpanProf.Hook.dll), copied into application pods by an init container" \
      org.opencontainers.image.version="${VERSION}"
USER 65532:65532
# What the init container runs (inject-hook.mjs sets the same command explicitly).
CMD ["cp", "-R", "/opt/spanprof/hook/.", "/spanprof-hook/"]
