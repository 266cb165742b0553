// Package ociimage holds the bits hack/image (the reconciler image) and hack/images (the test
// cluster's images) share to build OCI images without a container engine, with
// go-containerregistry: reproducible layers from in-memory entries (owned by root, one fixed
// modification time) and an image of OCI media types for one platform.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one entry of a layer: a regular file (Type 0 or tar.TypeReg), a directory
// (tar.TypeDir) or a symbolic link (tar.TypeSymlink to Link).
type Entry struct {
	// Name is the path in the image without the leading slash (bin/sh, tmp/).
	Name string
	// Mode is the permission bits, with the sticky bit as 0o1000 (tmp/: 0o1777).
	Mode int64
	// Data is a regular file's content.
	Data []byte
	// Type is the tar type flag; 0 means tar.TypeReg.
	Type byte
	// Link is a symbolic link's target.
	Link string
}

// File is a regular file entry.
func File(name string, mode int64, data []byte) Entry {
	return Entry{Name: name, Mode: mode, Data: data, Type: tar.TypeReg}
}

// Dir is a directory entry.
func Dir(name string, mode int64) Entry { return Entry{Name: name, Mode: mode, Type: tar.TypeDir} }

// Symlink is a symbolic link entry name → target.
func Symlink(name, target string) Entry {
	return Entry{Name: name, Mode: 0o777, Type: tar.TypeSymlink, Link: target}
}

// Layer is an OCI layer (types.OCILayer) holding entries in order, in PAX format, owned by
// root (uid and gid 0, no user names), with modification time mtime (zero means the Unix
// epoch).
func Layer(mtime time.Time, entries ...Entry) (v1.Layer, error) {
	if mtime.IsZero() {
		mtime = time.Unix(0, 0).UTC()
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: e.Mode, ModTime: mtime, Typeflag: e.Type, Format: tar.FormatPAX}
		switch e.Type {
		case 0, tar.TypeReg:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
		case tar.TypeDir:
		case tar.TypeSymlink:
			h.Linkname = e.Link
		default:
			return nil, fmt.Errorf("%s: unsupported tar type %q", e.Name, e.Type)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// SplitPlatform splits "<os>/<arch>" (linux/amd64); an error names the expected form.
func SplitPlatform(platform string) (osName, arch string, err error) {
	osName, arch, ok := strings.Cut(platform, "/")
	if !ok || osName == "" || arch == "" {
		return "", "", fmt.Errorf("platform %q: want <os>/<arch>", platform)
	}
	return osName, arch, nil
}

// Image is the image of layers (in order) with OCI manifest and config media types, for
// osName/arch, created at created (zero means the Unix epoch: reproducible builds), its run
// config set by edit (nil: left empty).
func Image(osName, arch string, created time.Time, layers []v1.Layer, edit func(*v1.Config)) (v1.Image, error) {
	if created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layers...)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = osName, arch, v1.Time{Time: created}
	if edit != nil {
		edit(&cf.Config)
	}
	return mutate.ConfigFile(img, cf)
}
