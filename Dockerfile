# The iasql sidecar image: iasql run --dsn ... (or IASQL_DSN).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/iasql ./cmd/iasql

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/iasql /usr/local/bin/iasql
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/iasql"]
CMD ["run"]
