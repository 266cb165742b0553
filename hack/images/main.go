// Command images builds the OCI images the local test cluster's real kubelet node runs (Specs)
// without a container engine or registry, using go-containerregistry: reproducible
// docker-archive tarballs (fixed timestamps, root-owned files, the host's arch) tagged with their
// references, for `ctr -n k8s.io images import` and imagePullPolicy IfNotPresent. A tarball
// already holding the image is left alone (-force rewrites it). The Go programs (pause,
// performer, modelserver, deviceplugin) document themselves; the busybox-based images need
// bin/busybox (`tools/install.sh busybox`).
//
//	go run ./hack/images -out .cache/images [-only pause,busybox]
package main

import (
	"bytes"
	"debug/elf"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gantry-dev/terraform-provider-gantry/hack/internal/ociimage"
)

const (
	// Module is this repository's Go module: the Go programs are built from it.
	Module = "github.com/gantry-dev/terraform-provider-gantry"
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/gantry-dev/terraform-provider-gantry"
	// DefaultBusybox is where `tools/install.sh busybox` links the pinned static busybox,
	// relative to the module root (found from the working directory up: DefaultBusyboxPath).
	DefaultBusybox = "bin/busybox"
	// PackageDir is the package content's directory in the test-package image (Skyhook's).
	PackageDir = "skyhook-package"
	// basePath is the busybox-based images' PATH.
	basePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// packageFiles is the test-package's content: run, config.json and skyhook_dir/.
//
//go:embed package
var packageFiles embed.FS

// Spec is one image to build.
type Spec struct {
	// Name is the image's short name (-only): the last path element of its repository.
	Name string
	// Refs are its references; the first names the tarball, all are its tags.
	Refs []string
	// Busybox says the image is busybox-based (needs the host's static busybox).
	Busybox bool
	// Title is the org.opencontainers.image.description label.
	Title string
	build func(b *Builder, s Spec) (v1.Image, error)
}

// Specs are the images, in build order.
var Specs = []Spec{
	{Name: "pause", Refs: []string{"registry.k8s.io/pause:3.10"}, Title: "CRI sandbox (pause) image of the gantry test cluster", build: (*Builder).pause},
	{Name: "busybox", Refs: []string{"docker.io/library/busybox:1.36"}, Busybox: true, Title: "busybox (Debian busybox-static 1.37) of the gantry test cluster", build: (*Builder).busybox},
	{Name: "test-package", Refs: []string{"ghcr.io/gantry-dev/test-package:1.0.0", "ghcr.io/gantry-dev/test-package:1.1.0", "ghcr.io/gantry-dev/test-package:2.0.0"}, Busybox: true,
		Title: "gantry test package (Skyhook package layout)", build: (*Builder).testPackage},
	{Name: "test-performer", Refs: []string{"ghcr.io/gantry-dev/test-performer:1.0.0"}, Busybox: true, Title: "gantry test performer", build: (*Builder).performer},
	{Name: "test-model-server", Refs: []string{"ghcr.io/gantry-dev/test-model-server:1.0.0"}, Busybox: true, Title: "gantry test model server (OpenAI-compatible)", build: (*Builder).modelServer},
	{Name: "test-device-plugin", Refs: []string{"ghcr.io/gantry-dev/test-device-plugin:1.0.0"}, Busybox: true, Title: "gantry test device plugin (fake NVIDIA GPUs)", build: (*Builder).devicePlugin},
}

// Lookup finds specs by short name or reference ("pause,busybox"); an unknown name is an
// error naming the known ones.
func Lookup(names string) ([]Spec, error) {
	var out []Spec
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		i := slices.IndexFunc(Specs, func(s Spec) bool { return s.Name == n || slices.Contains(s.Refs, n) })
		if i < 0 {
			known := make([]string, len(Specs))
			for j, s := range Specs {
				known[j] = s.Name
			}
			return nil, fmt.Errorf("unknown image %q (known: %s)", n, strings.Join(known, ", "))
		}
		if !slices.ContainsFunc(out, func(s Spec) bool { return s.Name == Specs[i].Name }) {
			out = append(out, Specs[i])
		}
	}
	return out, nil
}

// FileName is the tarball's file name for reference ref: its repository's last path element
// and tag joined by "_", with ".tar" (registry.k8s.io/pause:3.10 → pause_3.10.tar).
func FileName(ref string) (string, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", err
	}
	return path.Base(tag.RepositoryStr()) + "_" + tag.TagStr() + ".tar", nil
}

// Builder builds the images for linux/runtime.GOARCH.
type Builder struct {
	// Busybox is the static busybox binary (DefaultBusybox).
	Busybox string
	// TempDir receives the Go binaries.
	TempDir string
	// Go is the go command ("go").
	Go string
	// Arch is the images' architecture (runtime.GOARCH).
	Arch string

	base    v1.Layer
	binary  map[string][]byte
	created time.Time
}

// NewBuilder is a Builder for the host's architecture with the default busybox, building
// into tempDir.
func NewBuilder(tempDir string) *Builder {
	return &Builder{Busybox: DefaultBusyboxPath(), TempDir: tempDir, Go: "go", Arch: runtime.GOARCH}
}

// Build builds spec s.
func (b *Builder) Build(s Spec) (v1.Image, error) {
	img, err := s.build(b, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return img, nil
}

// GoBinary builds the static linux program ./hack/images/<dir> of this module (cached per
// Builder) and returns it.
func (b *Builder) GoBinary(dir string) ([]byte, error) {
	if bin, ok := b.binary[dir]; ok {
		return bin, nil
	}
	out := filepath.Join(b.TempDir, "bin", b.Arch, dir)
	cmd := exec.Command(b.Go, "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", out, Module+"/hack/images/"+dir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+b.Arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s (run it inside the module %s): %v\n%s", strings.Join(cmd.Args, " "), Module, err, msg)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	if b.binary == nil {
		b.binary = map[string][]byte{}
	}
	b.binary[dir] = bin
	return bin, nil
}

// DefaultBusyboxPath is DefaultBusybox under the module root: the nearest directory from the
// working directory up that holds go.mod (DefaultBusybox itself when there is none).
func DefaultBusyboxPath() string {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return filepath.Join(dir, DefaultBusybox)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return DefaultBusybox
}

// CheckBusybox reads the busybox binary at path and checks it is a static ELF executable for
// arch: the images have no C library.
func CheckBusybox(path, arch string) ([]byte, error) {
	const hint = "run tools/install.sh busybox"
	bin, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("busybox: %s does not exist; the busybox-based images copy Debian's static busybox from there: %s", path, hint)
	}
	if err != nil {
		return nil, fmt.Errorf("busybox: %w", err)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return nil, fmt.Errorf("busybox: %s is not an ELF executable (%v): %s", path, err, hint)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("busybox: %s is dynamically linked (the busybox package?), the images need a static one: %s", path, hint)
		}
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
		"riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390}[arch]
	if want != elf.EM_NONE && f.Machine != want {
		return nil, fmt.Errorf("busybox: %s is for %v, the images are for %s", path, f.Machine, arch)
	}
	return bin, nil
}

// Applets lists the applets of the busybox binary at path (`busybox --list`), sorted, without
// busybox itself.
func Applets(path string) ([]string, error) {
	out, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", path, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a == "busybox" {
			continue
		}
		if strings.ContainsAny(a, "/\\") || a == "." || a == ".." {
			return nil, fmt.Errorf("%s --list: odd applet name %q", path, a)
		}
		applets = append(applets, a)
	}
	slices.Sort(applets)
	applets = slices.Compact(applets)
	if !slices.Contains(applets, "sh") {
		return nil, fmt.Errorf("%s --list has no sh applet", path)
	}
	return applets, nil
}

// BusyboxLayer is the busybox base layer (cached per Builder).
func (b *Builder) BusyboxLayer() (v1.Layer, error) {
	if b.base != nil {
		return b.base, nil
	}
	bin, err := CheckBusybox(b.Busybox, b.Arch)
	if err != nil {
		return nil, err
	}
	applets, err := Applets(b.Busybox)
	if err != nil {
		return nil, err
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group := "root:x:0:\nnobody:x:65534:\n"
	entries := []ociimage.Entry{ociimage.Dir("bin/", 0o755), ociimage.File("bin/busybox", 0o755, bin)}
	for _, a := range applets {
		entries = append(entries, ociimage.Symlink("bin/"+a, "busybox"))
	}
	entries = append(entries,
		ociimage.Dir("etc/", 0o755),
		ociimage.File("etc/group", 0o644, []byte(group)),
		ociimage.File("etc/passwd", 0o644, []byte(passwd)),
		ociimage.Dir("root/", 0o700),
		ociimage.Symlink("sbin", "bin"),
		ociimage.Dir("tmp/", 0o1777),
		ociimage.Dir("usr/", 0o755),
		ociimage.Symlink("usr/bin", "../bin"),
		ociimage.Symlink("usr/sbin", "../bin"),
		ociimage.Dir("var/", 0o755),
	)
	b.base, err = ociimage.Layer(b.created, entries...)
	return b.base, err
}

// image is the image of layers with the config edit sets, labelled for s.
func (b *Builder) image(s Spec, layers []v1.Layer, edit func(*v1.Config)) (v1.Image, error) {
	tag, _ := name.NewTag(s.Refs[0]) // Specs hold valid references (tested)
	return ociimage.Image("linux", b.Arch, b.created, layers, func(c *v1.Config) {
		c.WorkingDir = "/"
		c.Labels = map[string]string{
			"org.opencontainers.image.title":       s.Name,
			"org.opencontainers.image.description": s.Title,
			"org.opencontainers.image.version":     tag.TagStr(),
			"org.opencontainers.image.source":      Source,
		}
		edit(c)
	})
}

func (b *Builder) pause(s Spec) (v1.Image, error) {
	bin, err := b.GoBinary("pause")
	if err != nil {
		return nil, err
	}
	layer, err := ociimage.Layer(b.created, ociimage.File("pause", 0o755, bin))
	if err != nil {
		return nil, err
	}
	return b.image(s, []v1.Layer{layer}, func(c *v1.Config) {
		c.Entrypoint = []string{"/pause"}
		c.User = "65535:65535" // as upstream's
	})
}

// busybox builds the image under the tag Gantry's default health-check image names, from
// Debian's static busybox 1.37: Debian 12's own 1.35 segfaults on `wget -T`, the timeout the
// health checks pass.
func (b *Builder) busybox(s Spec) (v1.Image, error) {
	return b.onBusybox(s, nil, func(*v1.Config) {})
}

// onBusybox is an image of the busybox layer plus entries (when any), PATH set and Cmd
// ["sh"] unless edit changes them.
func (b *Builder) onBusybox(s Spec, entries []ociimage.Entry, edit func(*v1.Config)) (v1.Image, error) {
	base, err := b.BusyboxLayer()
	if err != nil {
		return nil, err
	}
	layers := []v1.Layer{base}
	if len(entries) > 0 {
		l, err := ociimage.Layer(b.created, entries...)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	return b.image(s, layers, func(c *v1.Config) {
		c.Env = []string{basePath}
		c.Cmd = []string{"sh"}
		edit(c)
	})
}

// serverImage is a Go server ./hack/images/<dir> at /<file> on busybox, listening on port.
func (b *Builder) serverImage(s Spec, dir, file, port string) (v1.Image, error) {
	bin, err := b.GoBinary(dir)
	if err != nil {
		return nil, err
	}
	return b.onBusybox(s, []ociimage.Entry{ociimage.File(file, 0o755, bin)}, func(c *v1.Config) {
		c.Entrypoint, c.Cmd = []string{"/" + file}, nil
		c.ExposedPorts = map[string]struct{}{port + "/tcp": {}}
	})
}

func (b *Builder) performer(s Spec) (v1.Image, error) {
	return b.serverImage(s, "performer", "performer", "9090")
}

// modelServerLinks are the names the model server also answers to in its image (its
// ray.go): the commands KAITO's vLLM image has for a multi-node group.
var modelServerLinks = []string{"usr/local/bin/ray", "usr/local/bin/python3", "workspace/vllm/multi-node-serving.sh"}

func (b *Builder) modelServer(s Spec) (v1.Image, error) {
	bin, err := b.GoBinary("modelserver")
	if err != nil {
		return nil, err
	}
	entries := []ociimage.Entry{ociimage.File("model-server", 0o755, bin),
		ociimage.Dir("usr/local", 0o755), ociimage.Dir("usr/local/bin", 0o755), ociimage.Dir("workspace", 0o755), ociimage.Dir("workspace/vllm", 0o755)}
	for _, l := range modelServerLinks {
		entries = append(entries, ociimage.Symlink(l, "/model-server"))
	}
	return b.onBusybox(s, entries, func(c *v1.Config) {
		c.Entrypoint, c.Cmd = []string{"/model-server"}, nil
		c.ExposedPorts = map[string]struct{}{"8000/tcp": {}}
	})
}

func (b *Builder) devicePlugin(s Spec) (v1.Image, error) {
	bin, err := b.GoBinary("deviceplugin")
	if err != nil {
		return nil, err
	}
	return b.onBusybox(s, []ociimage.Entry{ociimage.File("device-plugin", 0o755, bin)}, func(c *v1.Config) {
		c.Entrypoint, c.Cmd = []string{"/device-plugin"}, nil
	})
}

// PackageEntries is the test-package's layer content: /skyhook-package/ from ./package, run
// and the step scripts (skyhook_dir/*.sh but lib.sh, which they source) executable.
func PackageEntries() ([]ociimage.Entry, error) {
	var entries []ociimage.Entry
	err := fs.WalkDir(packageFiles, "package", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := PackageDir + strings.TrimPrefix(p, "package")
		if d.IsDir() {
			entries = append(entries, ociimage.Dir(rel+"/", 0o755))
			return nil
		}
		data, err := packageFiles.ReadFile(p)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if rel == PackageDir+"/run" || (path.Dir(rel) == PackageDir+"/skyhook_dir" && strings.HasSuffix(rel, ".sh") && path.Base(rel) != "lib.sh") {
			mode = 0o755
		}
		entries = append(entries, ociimage.File(rel, mode, data))
		return nil
	})
	return entries, err
}

func (b *Builder) testPackage(s Spec) (v1.Image, error) {
	entries, err := PackageEntries()
	if err != nil {
		return nil, err
	}
	return b.onBusybox(s, entries, func(c *v1.Config) {
		c.Entrypoint, c.Cmd = []string{"/" + PackageDir + "/run"}, nil
	})
}

// Write writes img tagged with s.Refs to dir/FileName(s.Refs[0]), unless the file already
// holds that image (config and layers) under those tags and force is false. It returns the
// path and whether it wrote.
func Write(dir string, s Spec, img v1.Image, force bool) (string, bool, error) {
	file, err := FileName(s.Refs[0])
	if err != nil {
		return "", false, err
	}
	p := filepath.Join(dir, file)
	refs := map[name.Reference]v1.Image{}
	for _, r := range s.Refs {
		tag, err := name.NewTag(r, name.StrictValidation)
		if err != nil {
			return "", false, err
		}
		refs[tag] = img
	}
	want, err := tarball.ComputeManifest(refs)
	if err != nil {
		return "", false, err
	}
	if !force && sameManifest(p, want) {
		return p, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	tmp := p + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		os.Remove(tmp)
		return "", false, err
	}
	return p, true, os.Rename(tmp, p)
}

// sameManifest says whether the tarball at p has manifest want (its tags in any order).
func sameManifest(p string, want tarball.Manifest) bool {
	have, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(p) })
	if err != nil || len(have) != 1 || len(want) != 1 {
		return false
	}
	h, w := have[0], want[0]
	return h.Config == w.Config && slices.Equal(h.Layers, w.Layers) &&
		slices.Equal(slices.Sorted(slices.Values(h.RepoTags)), slices.Sorted(slices.Values(w.RepoTags)))
}

// run is the command: it builds the images args select into -out and prints
// "<reference> <path>" per reference on stdout, what it did on stderr.
func run(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("images", flag.ContinueOnError)
	fl.SetOutput(stderr)
	out := fl.String("out", ".cache/images", "directory the tarballs are written to")
	only := fl.String("only", "", "comma-separated images to build (short names: pause, busybox, test-package, test-performer, test-model-server, test-device-plugin; or references); default all")
	busybox := fl.String("busybox", DefaultBusyboxPath(), "static busybox binary for the busybox-based images (tools/install.sh busybox fetches the pinned one)")
	force := fl.Bool("force", false, "rewrite tarballs that already hold the image")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	specs := Specs
	if *only != "" {
		var err error
		if specs, err = Lookup(*only); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "gantry-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := NewBuilder(tmp)
	b.Busybox = *busybox
	for _, s := range specs {
		img, err := b.Build(s)
		if err != nil {
			return err
		}
		p, wrote, err := Write(*out, s, img, *force)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		what := "unchanged"
		if wrote {
			what = "wrote"
		}
		fmt.Fprintf(stderr, "%s %s (%s, %s)\n", what, p, strings.Join(s.Refs, " "), d)
		for _, r := range s.Refs {
			fmt.Fprintf(stdout, "%s %s\n", r, p)
		}
	}
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "images:", err)
		}
		os.Exit(1)
	}
}
