# Nimbus in one image: the server, PostgreSQL for the embedded database, and the Pulumi CLI
# with its YAML language host.

FROM golang:1.26-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY package.json package-lock.json ./
COPY scripts ./scripts
RUN NIMBUS_TOOLS_DIR=/tools scripts/pulumi-toolchain.sh > /tools.path
COPY . .
RUN scripts/assets.sh && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/nimbus . && \
    mkdir -p /out/pulumi && cp -L "$(tail -n1 /tools.path)"/* /out/pulumi/

FROM debian:bookworm-slim
RUN apt-get update && \
    apt-get install -y --no-install-recommends postgresql ca-certificates curl && \
    rm -rf /var/lib/apt/lists/* && \
    useradd --system --create-home --home-dir /home/nimbus nimbus && \
    mkdir /data && chown nimbus:nimbus /data
COPY --from=build /out/nimbus /usr/local/bin/nimbus
COPY --from=build /out/pulumi/ /opt/pulumi/bin/
ENV PATH=/opt/pulumi/bin:/usr/lib/postgresql/15/bin:$PATH \
    NIMBUS_DATA_DIR=/data \
    NIMBUS_ADDR=0.0.0.0:8080 \
    NIMBUS_PULUMI_DIR=/opt/pulumi/bin \
    PULUMI_SKIP_UPDATE_CHECK=true
USER nimbus
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s CMD curl -fsS http://127.0.0.1:8080/readyz || exit 1
ENTRYPOINT ["nimbus"]
CMD ["serve"]
