# syntax=docker/dockerfile:1
#
# clawmem container image: one static binary, run as a non-root user, with
# everything it writes under /data.
#
#   docker build -t clawmem:local .
#   docker run --rm -v clawmem-data:/data clawmem:local            # `clawmem up`: all in one process
#   docker run --rm clawmem:local worker capture --nats-url nats://nats:4222
#
# docker-compose.yml and deploy/k8s run one role per container.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so editing sources does not re-download them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=0.1.0-dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=${VERSION}" -o /clawmem ./cmd/clawmem

# Alpine rather than distroless: its busybox wget is what the compose
# healthcheck uses to probe the ingest endpoint's GET /healthz. It also has
# the CA bundle for HTTPS embedding and LLM endpoints.
FROM alpine:3.22
RUN addgroup -S -g 10001 clawmem \
 && adduser -S -D -H -u 10001 -G clawmem -h /data -s /sbin/nologin clawmem \
 && install -d -o 10001 -g 10001 -m 0700 /data
COPY --from=build /clawmem /clawmem
ENV CLAWMEM_DATA_DIR=/data
# A named volume mounted here starts with this directory's owner (10001).
VOLUME /data
# The hook ingest endpoint, when a config binds it beyond loopback.
EXPOSE 7433
USER 10001:10001
ENTRYPOINT ["/clawmem"]
CMD ["up"]
