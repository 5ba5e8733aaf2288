# Nimbus in one image: the server, PostgreSQL for the embedded database, the Pulumi CLI with its
# YAML language host, and the provider plugins the built-in components deploy with.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t nimbus .
#
# dockerfile_test.go reads this file: the Go version, the plugins, the init, the user.

# The patch release go.mod names: the toolchain builds Nimbus as its tests were run.
FROM golang:1.26.8-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
# Static binaries, as the Taskfile builds them: nothing of the build image's C library needed.
ENV CGO_ENABLED=0 PULUMI_SKIP_UPDATE_CHECK=true
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY package.json package-lock.json ./
COPY scripts ./scripts
RUN NIMBUS_TOOLS_DIR=/tools scripts/pulumi-toolchain.sh > /tools.path
# The Kubernetes provider, as `go tool task toolchain` builds it; before the sources are copied,
# so a change to them does not build it again. The cache links it, so it is copied out whole.
RUN NIMBUS_TOOLS_DIR=/tools scripts/kubernetes-provider.sh /tmp/kubernetes >/dev/null && \
    mkdir -p /out/pulumi && cp -L /tmp/kubernetes/pulumi-resource-kubernetes /out/pulumi/

# The Proxmox components pin this release of their provider; a plugin on the CLI's PATH is
# used whatever the version a program asks for, so it must be the one they were written for.
ARG PROXMOXVE_VERSION=7.13.0
RUN PULUMI_HOME=/tmp/pulumi-home "$(tail -n1 /tools.path)"/pulumi plugin install resource proxmoxve "${PROXMOXVE_VERSION}" --exact \
        --server github://api.github.com/muhlba91/pulumi-proxmoxve && \
    mkdir -p /out/pulumi && \
    cp /tmp/pulumi-home/plugins/resource-proxmoxve-v"${PROXMOXVE_VERSION}"/pulumi-resource-proxmoxve /out/pulumi/ && \
    rm -rf /tmp/pulumi-home

COPY . .
ARG VERSION=dev
# The simulated cloud's provider is built beside the CLI, as `go tool task toolchain` does.
RUN scripts/assets.sh && \
    go build -trimpath -ldflags "-s -w -X nimbus/app/cli.Version=${VERSION}" -o /out/nimbus . && \
    scripts/simcloud.sh /out/pulumi >/dev/null && \
    cp -L "$(tail -n1 /tools.path)"/pulumi "$(tail -n1 /tools.path)"/pulumi-language-yaml /out/pulumi/

FROM debian:bookworm-slim
# tini is process 1: Nimbus parents Postgres and engine processes, and an engine's plugins
# that outlive it are reparented to process 1, which must reap them and pass signals on.
# The nimbus account has a fixed UID and GID so that a directory bind-mounted on /data can be
# given to it beforehand (chown 10001:10001).
RUN apt-get update && \
    apt-get install -y --no-install-recommends postgresql tini ca-certificates curl && \
    rm -rf /var/lib/apt/lists/* && \
    groupadd --system --gid 10001 nimbus && \
    useradd --system --uid 10001 --gid nimbus --create-home --home-dir /home/nimbus nimbus && \
    mkdir /data && chown nimbus:nimbus /data
COPY --from=build /out/nimbus /usr/local/bin/nimbus
# Named one by one: a build that failed to make one of them stops here rather than shipping
# an image whose components cannot deploy.
COPY --from=build /out/pulumi/pulumi /out/pulumi/pulumi-language-yaml \
     /out/pulumi/pulumi-resource-simcloud /out/pulumi/pulumi-resource-proxmoxve /out/pulumi/pulumi-resource-kubernetes \
     /opt/pulumi/bin/
ENV PATH=/opt/pulumi/bin:/usr/lib/postgresql/15/bin:$PATH \
    NIMBUS_DATA_DIR=/data \
    NIMBUS_ADDR=0.0.0.0:8080 \
    NIMBUS_PULUMI_DIR=/opt/pulumi/bin \
    PULUMI_SKIP_UPDATE_CHECK=true
# By number, so an orchestrator can tell it is not root without reading /etc/passwd.
USER 10001:10001
VOLUME /data
EXPOSE 8080
# Liveness, not readiness: while Nimbus restarts its Postgres /readyz fails and /healthz does
# not; /healthz fails when the process is wedged or has given up on its database.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/bin/tini", "--", "nimbus"]
CMD ["serve"]
