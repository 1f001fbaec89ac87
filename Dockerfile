# syntax=docker/dockerfile:1
# Build a static binary (pure-Go SQLite, so no cgo), then ship it alone on a
# minimal non-root image. The builder is the Go release go.mod names: an
# older 1.26 image would refuse `go 1.26.8` under GOTOOLCHAIN=local.
FROM golang:1.26.8 AS build
ENV GOTOOLCHAIN=local
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .dockerignore leaves .git out, so the toolchain cannot record the
# revision: it is given as build arguments (docker-compose.yml passes
# PERSONNEL_VERSION and PERSONNEL_REVISION), for `personnel version`, the
# build-info metric and the OpenAPI document.
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X main.buildVersion=${VERSION} -X main.buildRevision=${REVISION}" \
    -o /out/personnel ./cmd/personnel \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/personnel /personnel
COPY --from=build --chown=65532:65532 /out/data /data
# The embedded SQLite database lives in /data when no MySQL is configured:
# mount a volume there (docker run -v personnel-data:/data) to keep it. No
# VOLUME instruction: with MySQL it would only leave anonymous volumes behind.
# A container is reached through its own interfaces: listen on all of them
# (the binary's default, 127.0.0.1, would serve nobody outside it).
ENV PERSONNEL_ADDR=0.0.0.0:8000 \
    PERSONNEL_DB_DSN=/data/personnel.db
EXPOSE 8000
USER 65532:65532
# The image has no shell or curl: the binary asks its own /readyz. The start
# period covers the wait for a database that is still starting.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/personnel", "healthcheck"]
ENTRYPOINT ["/personnel"]
CMD ["serve"]
