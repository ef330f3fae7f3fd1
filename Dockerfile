# Magnetar image: the static binary (CGO_ENABLED=0, -tags pebblegozstd, as `make build`) on a
# distroless base, running as a non-root user. The default command is the standalone with its
# data in /data; the same image runs every role (see docker-compose.yml, deploy/helm/magnetar):
#
#   docker build -t magnetar .
#   docker run -p 6650:6650 -p 8080:8080 magnetar
#   docker run -e PULSAR_PREFIX_maxMessageSize=1048576 magnetar      # Pulsar-style config
#
# Configuration comes from flags, MAGNETAR_* variables, PULSAR_PREFIX_<key> variables (as
# Pulsar's images accept) and --config files (Pulsar's own .conf files work). When ready,
# the standalone logs one line containing "Successfully updated the policies on namespace
# public/default", which testcontainers' Pulsar modules wait for.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces go-icu-regex with this local module (internal/sql/icuregex/regex.go).
COPY internal/sql/icuregex/ internal/sql/icuregex/
RUN go mod download
COPY . .
ARG VERSION=dev
RUN make build VERSION=${VERSION} && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/magnetar /magnetar
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
# 6650 binary protocol, 8080 admin REST, /metrics and the console (/ui); a cluster's roles
# also use 2379/2380 (metadata), 3181 (bookie) and 8000 (bookie metrics and health).
EXPOSE 6650 8080
VOLUME ["/data"]
ENTRYPOINT ["/magnetar"]
CMD ["standalone", "--data-dir", "/data"]
