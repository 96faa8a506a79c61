# Perch in a container: docker build -t perch . (not tested here: no
# container registry is reachable from the machine Perch is built on).
# The same static binary as the release's (scripts/release.sh), on
# distroless, as a non-root user, with its SQLite data in /var/lib/perch.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/perch ./cmd/perch \
 && mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/perch /usr/bin/perch
# The volume's directory, owned by distroless's nonroot user (65532).
COPY --from=build --chown=65532:65532 /out/data /var/lib/perch
ENV PERCH_LISTEN=:8080 \
    PERCH_DATABASE_URL=/var/lib/perch/perch.db
WORKDIR /var/lib/perch
VOLUME /var/lib/perch
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/usr/bin/perch"]
CMD ["serve"]
