// Command image builds the gantry-reconciler OCI image without a container engine, with
// go-containerregistry (the library ko and crane are built on): one layer holding the static
// reconciler binary at /gantry-reconciler and an /etc/passwd naming the nonroot user, a config
// with that entrypoint, user 65532:65532 (as distroless's static:nonroot and the chart's
// podSecurityContext), the platform and OCI labels. The result is a tarball `docker load`,
// `kind load image-archive` and `crane push` accept. `make image` runs it per platform:
//
//	go run ./hack/image -binary bin/linux_amd64/gantry-reconciler -platform linux/amd64 \
//	    -tag ghcr.io/gantry-dev/gantry-reconciler:0.1.0 -version 0.1.0 -out image.tar
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gantry-dev/terraform-provider-gantry/hack/internal/ociimage"
)

const (
	// Entrypoint is the reconciler binary's path in the image.
	Entrypoint = "/gantry-reconciler"
	// User is the image's user and group (nonroot, as distroless's static:nonroot).
	User = "65532:65532"
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/gantry-dev/terraform-provider-gantry"
)

// Options say what to build.
type Options struct {
	// Binary is the path of the static gantry-reconciler binary for Platform.
	Binary string
	// Platform is "<os>/<arch>" (linux/amd64, linux/arm64).
	Platform string
	// Version is the org.opencontainers.image.version label (the release version).
	Version string
	// Created is the image's creation time; zero means the Unix epoch (reproducible builds).
	Created time.Time
}

// Build returns the image: its one layer (binary, /etc/passwd), config and OCI media types.
// It fails when the binary cannot be read or the platform is not "<os>/<arch>".
func Build(o Options) (v1.Image, error) {
	osName, arch, err := ociimage.SplitPlatform(o.Platform)
	if err != nil {
		return nil, err
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0).UTC()
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	layer, err := tarLayer(o.Created, bin)
	if err != nil {
		return nil, err
	}
	return ociimage.Image(osName, arch, o.Created, []v1.Layer{layer}, func(c *v1.Config) {
		c.Entrypoint = []string{Entrypoint}
		c.User = User
		c.WorkingDir = "/"
		c.Env = []string{"PATH=/"}
		c.Labels = map[string]string{
			"org.opencontainers.image.title":    "gantry-reconciler",
			"org.opencontainers.image.version":  o.Version,
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.licenses": "MPL-2.0",
		}
	})
}

// tarLayer is the image's only layer: /etc/passwd (root and nonroot) and the binary, mode
// 0755, owned by root, with a fixed modification time.
func tarLayer(mtime time.Time, bin []byte) (v1.Layer, error) {
	passwd := []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
	return ociimage.Layer(mtime, ociimage.File("etc/passwd", 0o644, passwd), ociimage.File(strings.TrimPrefix(Entrypoint, "/"), 0o755, bin))
}

func main() {
	var o Options
	var tag, out string
	flag.StringVar(&o.Binary, "binary", "", "static gantry-reconciler binary for -platform")
	flag.StringVar(&o.Platform, "platform", "linux/amd64", "<os>/<arch> of the binary")
	flag.StringVar(&o.Version, "version", "0.1.0", "release version (label)")
	flag.StringVar(&tag, "tag", "ghcr.io/gantry-dev/gantry-reconciler:0.1.0", "image reference written into the tarball")
	flag.StringVar(&out, "out", "", "tarball to write")
	flag.Parse()
	ref, err := name.NewTag(tag)
	if err != nil {
		log.Fatalf("-tag: %v", err)
	}
	img, err := Build(o)
	if err != nil {
		log.Fatal(err)
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		log.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s %s\n", out, ref, d)
}
