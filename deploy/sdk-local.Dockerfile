# deploy/sdk-local.Dockerfile: a .NET SDK image made from this machine's own SDK, for building
# deploy/Dockerfile where mcr.microsoft.com cannot be reached (DOTNET_SDK_IMAGE=localhost/dotnet-sdk:local).
# deploy/build-local.sh lays out its context:
#   dotnet/                  a copy (hard links) of the host's SDK directory (/usr/share/dotnet)
#   nuget/NuGet.Config       the host's NuGet configuration (~/.nuget/NuGet/NuGet.Config), if any
#   ca-certificates.crt      the host's CA bundle, so a restore through the same TLS proxy as the
#                            host's (if any) trusts it
ARG BASE_IMAGE=localhost/bookworm:base
FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
# The SDK's native dependencies on bookworm (the official SDK images install the same).
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
        ca-certificates libc6 libgcc-s1 libgssapi-krb5-2 libicu72 libssl3 libstdc++6 zlib1g \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY nuget/ /root/.nuget/NuGet/
COPY dotnet/ /usr/share/dotnet/
RUN ln -sf /usr/share/dotnet/dotnet /usr/bin/dotnet && dotnet --version
ENV DOTNET_ROOT=/usr/share/dotnet \
    DOTNET_CLI_TELEMETRY_OPTOUT=1 \
    DOTNET_NOLOGO=1 \
    DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1 \
    DOTNET_CLI_WORKLOAD_UPDATE_NOTIFY_DISABLE=1 \
    DOTNET_GENERATE_ASPNET_CERTIFICATE=false \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# The host's setting (deploy/build-local.sh passes it): `offline` where the certificate revocation
# servers cannot be reached, as here.
ARG NUGET_CERT_REVOCATION_MODE=online
ENV NUGET_CERT_REVOCATION_MODE=${NUGET_CERT_REVOCATION_MODE}
