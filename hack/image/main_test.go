package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestImage builds the reconciler image from a freshly built static reconciler, writes the
// tarball as `make image` does, reads it back and checks the config (entrypoint, nonroot user,
// platform, labels), the layer (the binary executable by the nonroot user, /etc/passwd) and
// that the binary taken out of the layer runs (its -h exits 0).
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gantry-reconciler")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../../reconciler/cmd/gantry-reconciler")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if _, err := Build(Options{Binary: bin, Platform: "linux"}); err == nil || !strings.Contains(err.Error(), "<os>/<arch>") {
		t.Errorf("platform without arch: %v", err)
	}
	img, err := Build(Options{Binary: bin, Platform: "linux/" + runtime.GOARCH, Version: "9.8.7"})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag("ghcr.io/gantry-dev/gantry-reconciler:9.8.7")
	path := filepath.Join(dir, "image.tar")
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		t.Fatal(err)
	}
	again, err := Build(Options{Binary: bin, Platform: "linux/" + runtime.GOARCH, Version: "9.8.7"})
	if err != nil {
		t.Fatal(err)
	}
	if d1, d2 := digest(t, img), digest(t, again); d1 != d2 {
		t.Errorf("two builds of one binary differ: %s, %s (not reproducible)", d1, d2)
	}

	got, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want OCI", mt)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/gantry-reconciler" ||
		c.User != "65532:65532" || c.Labels["org.opencontainers.image.version"] != "9.8.7" ||
		c.Labels["org.opencontainers.image.source"] != Source || !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("config: os %s arch %s entrypoint %v user %q labels %v created %v", cf.OS, cf.Architecture, c.Entrypoint, c.User, c.Labels, cf.Created)
	}
	layers, err := got.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	extracted := filepath.Join(dir, "from-image")
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == "gantry-reconciler" {
			f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	if h := files["gantry-reconciler"]; h == nil || h.Mode&0o005 != 0o005 || h.Uid != 0 {
		t.Errorf("binary entry %+v: not there or not executable by the nonroot user", h)
	}
	if files["etc/passwd"] == nil {
		t.Error("no /etc/passwd")
	}
	if out, err := exec.Command(extracted, "-h").CombinedOutput(); err != nil || !strings.Contains(string(out), "-leader-elect") {
		t.Errorf("the image's binary -h: %v\n%s", err, out)
	}
}

func digest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
