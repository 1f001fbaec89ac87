# syntax=docker/dockerfile:1
# Build a static binary (pure-Go SQLite, so no cgo), then ship it alone on a
# minimal non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/personnel ./cmd/personnel \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/personnel /personnel
COPY --from=build --chown=65532:65532 /out/data /data
# The embedded SQLite database lives in /data; mount a volume there when
# running a single container without MySQL.
ENV PERSONNEL_ADDR=:8000 \
    PERSONNEL_DB_DSN=/data/personnel.db
VOLUME /data
EXPOSE 8000
USER 65532:65532
ENTRYPOINT ["/personnel"]
CMD ["serve"]
