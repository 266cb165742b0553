# gantry-reconciler container image (config/manager/manager.yaml runs it in-cluster).
FROM golang:1.25 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /gantry-reconciler ./reconciler/cmd/gantry-reconciler

FROM gcr.io/distroless/static:nonroot
COPY --from=build /gantry-reconciler /gantry-reconciler
USER 65532:65532
ENTRYPOINT ["/gantry-reconciler"]
