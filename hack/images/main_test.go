package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// stages are Skyhook's modes, each of which config.json must map to a script.
var stages = []string{"apply", "apply-check", "config", "config-check", "uninstall", "uninstall-check",
	"upgrade", "upgrade-check", "post-interrupt", "post-interrupt-check"}

// requireBusybox skips a test of a busybox-based image when the host has no static busybox.
func requireBusybox(t *testing.T) {
	t.Helper()
	if _, err := CheckBusybox(DefaultBusyboxPath(), runtime.GOARCH); err != nil {
		t.Skipf("busybox-based image, and %v", err)
	}
}

// built is one run of the command for one image: its tarball and the image read back.
type built struct {
	path   string
	img    v1.Image
	stdout string
	stderr string
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]built{}
	outDir     string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "images-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	outDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build runs `images -out <dir> -only <name>` once per test binary, checks it printed
// "<reference> <path>" for every reference of the image, and reads the tarball back under
// every reference (they must all name one image).
func build(t *testing.T, short string) built {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := buildCache[short]; ok {
		return b
	}
	specs, err := Lookup(short)
	if err != nil || len(specs) != 1 {
		t.Fatalf("Lookup(%q): %v %v", short, specs, err)
	}
	s := specs[0]
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-out", outDir, "-only", short}, &stdout, &stderr); err != nil {
		t.Fatalf("images -only %s: %v\n%s", short, err, stderr.String())
	}
	file, _ := FileName(s.Refs[0])
	p := filepath.Join(outDir, file)
	var want []string
	for _, r := range s.Refs {
		want = append(want, r+" "+p)
	}
	if got := strings.Split(strings.TrimSpace(stdout.String()), "\n"); !slices.Equal(got, want) {
		t.Errorf("stdout lines %q, want %q", got, want)
	}
	var img v1.Image
	for _, r := range s.Refs {
		tag, err := name.NewTag(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tarball.ImageFromPath(p, &tag)
		if err != nil {
			t.Fatalf("%s from %s: %v", r, p, err)
		}
		if img == nil {
			img = got
		} else if digest(t, got) != digest(t, img) {
			t.Errorf("%s: another image than %s in one tarball", r, s.Refs[0])
		}
	}
	b := built{path: p, img: img, stdout: stdout.String(), stderr: stderr.String()}
	buildCache[short] = b
	return b
}

func digest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// checkConfig checks the platform and creation time and returns the run config. (A tarball
// read back has a Docker manifest whatever the image had: docker-archive has none.)
func checkConfig(t *testing.T, img v1.Image) v1.Config {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the Unix epoch", cf.Created)
	}
	return cf.Config
}

// entry is a file of an image's file system: its header and, for a regular file, content.
type entry struct {
	h    *tar.Header
	data []byte
}

// files walks the image's layers in order (later entries win) and returns its file system.
func files(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	fsys := map[string]entry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Uid != 0 || h.Gid != 0 {
				t.Errorf("%s owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			fsys[strings.TrimSuffix(h.Name, "/")] = entry{h, data}
		}
		rc.Close()
	}
	return fsys
}

// extract writes the image's regular files and directories under prefix to dir (modes kept)
// and returns where prefix landed.
func extract(t *testing.T, fsys map[string]entry, prefix, dir string) string {
	t.Helper()
	for n, e := range fsys {
		if n != prefix && !strings.HasPrefix(n, prefix+"/") {
			continue
		}
		p := filepath.Join(dir, n)
		switch e.h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, e.data, os.FileMode(e.h.Mode&0o777)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return filepath.Join(dir, prefix)
}

func TestSpecs(t *testing.T) {
	want := map[string]string{"pause": "pause_3.10.tar", "busybox": "busybox_1.36.tar", "test-package": "test-package_1.0.0.tar",
		"test-performer": "test-performer_1.0.0.tar", "test-model-server": "test-model-server_1.0.0.tar",
		"test-device-plugin": "test-device-plugin_1.0.0.tar"}
	for _, s := range Specs {
		for _, r := range s.Refs {
			if _, err := name.NewTag(r, name.StrictValidation); err != nil {
				t.Errorf("%s: %v", r, err)
			}
		}
		if f, err := FileName(s.Refs[0]); err != nil || f != want[s.Name] {
			t.Errorf("FileName(%s) = %q, %v, want %q", s.Refs[0], f, err, want[s.Name])
		}
	}
	if got, err := Lookup("busybox, registry.k8s.io/pause:3.10,busybox"); err != nil || len(got) != 2 || got[0].Name != "busybox" || got[1].Name != "pause" {
		t.Errorf("Lookup: %v, %v", got, err)
	}
	if _, err := Lookup("pause,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "test-model-server") {
		t.Errorf("Lookup of an unknown image: %v", err)
	}
	var stderr bytes.Buffer
	if err := run([]string{"-out", t.TempDir(), "-only", "nope"}, io.Discard, &stderr); err == nil {
		t.Error("-only nope: no error")
	}
}

func TestCheckBusybox(t *testing.T) {
	dir := t.TempDir()
	if _, err := CheckBusybox(filepath.Join(dir, "busybox"), runtime.GOARCH); err == nil || !strings.Contains(err.Error(), "tools/install.sh busybox") {
		t.Errorf("missing busybox: %v", err)
	}
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckBusybox(text, runtime.GOARCH); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("not an ELF file: %v", err)
	}
	// A dynamically linked program (the host's ls, when it is one) is refused.
	if ls, err := exec.LookPath("ls"); err == nil {
		if out, _ := exec.Command("file", "-L", ls).Output(); strings.Contains(string(out), "dynamically linked") {
			if _, err := CheckBusybox(ls, runtime.GOARCH); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
				t.Errorf("dynamic %s: %v", ls, err)
			}
		}
	}
	// The busybox-based images fail with the hint when busybox is missing.
	var stderr bytes.Buffer
	err := run([]string{"-out", dir, "-only", "busybox", "-busybox", filepath.Join(dir, "none")}, io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "tools/install.sh busybox") {
		t.Errorf("busybox image without busybox: %v", err)
	}
}

func TestPause(t *testing.T) {
	b := build(t, "pause")
	c := checkConfig(t, b.img)
	if !slices.Equal(c.Entrypoint, []string{"/pause"}) || len(c.Cmd) != 0 || c.User != "65535:65535" {
		t.Errorf("config: entrypoint %q cmd %q user %q", c.Entrypoint, c.Cmd, c.User)
	}
	fsys := files(t, b.img)
	if e, ok := fsys["pause"]; !ok || e.h.Typeflag != tar.TypeReg || e.h.Mode != 0o755 || len(fsys) != 1 {
		t.Fatalf("layer: want only /pause, 0755: %v", fsys)
	}

	// Unchanged inputs leave the tarball alone; -force rewrites it.
	st, _ := os.Stat(b.path)
	var stderr bytes.Buffer
	if err := run([]string{"-out", outDir, "-only", "pause"}, io.Discard, &stderr); err != nil || !strings.HasPrefix(stderr.String(), "unchanged "+b.path) {
		t.Errorf("second run: %v, %s", err, stderr.String())
	}
	if st2, _ := os.Stat(b.path); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("second run rewrote the tarball")
	}
	stderr.Reset()
	if err := run([]string{"-out", outDir, "-only", "pause", "-force"}, io.Discard, &stderr); err != nil || !strings.HasPrefix(stderr.String(), "wrote "+b.path) {
		t.Errorf("-force: %v, %s", err, stderr.String())
	}

	// The binary is static and behaves as a pause: blocks, exits 0 on SIGTERM and SIGINT.
	bin := filepath.Join(extract(t, fsys, "pause", t.TempDir()))
	if out, err := exec.Command("file", bin).Output(); err == nil && !strings.Contains(string(out), "statically linked") {
		t.Errorf("pause is not static: %s", out)
	}
	if out, err := exec.Command(bin, "-v").Output(); err != nil || !strings.Contains(string(out), "3.10") {
		t.Errorf("pause -v: %v %s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("pause exited without a signal: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		_ = cmd.Process.Signal(sig)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("pause after %v: %v, want exit 0", sig, err)
			}
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("pause still running 5s after %v", sig)
		}
	}
}

func TestBusybox(t *testing.T) {
	requireBusybox(t)
	b := build(t, "busybox")
	c := checkConfig(t, b.img)
	if !slices.Equal(c.Cmd, []string{"sh"}) || len(c.Entrypoint) != 0 || !slices.Contains(c.Env, basePath) {
		t.Errorf("config: entrypoint %q cmd %q env %q", c.Entrypoint, c.Cmd, c.Env)
	}
	fsys := files(t, b.img)
	host, _ := os.ReadFile(DefaultBusyboxPath())
	if e := fsys["bin/busybox"]; e.h == nil || e.h.Mode != 0o755 || !bytes.Equal(e.data, host) {
		t.Error("bin/busybox: missing, not 0755 or not the host's busybox")
	}
	applets, err := Applets(DefaultBusyboxPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range append(applets, "sh", "wget") {
		if e := fsys["bin/"+a]; e.h == nil || e.h.Typeflag != tar.TypeSymlink || e.h.Linkname != "busybox" {
			t.Errorf("bin/%s: want a symlink to busybox, have %+v", a, e.h)
		}
	}
	if e := fsys["tmp"]; e.h == nil || e.h.Typeflag != tar.TypeDir || e.h.Mode != 0o1777 {
		t.Errorf("tmp: want a directory of mode 1777, have %+v", e.h)
	}
	for f, lines := range map[string][]string{"etc/passwd": {"root:x:0:0:", "nobody:x:65534:65534:"}, "etc/group": {"root:x:0:", "nobody:x:65534:"}} {
		for _, l := range lines {
			if !strings.Contains(string(fsys[f].data), "\n"+l) && !strings.HasPrefix(string(fsys[f].data), l) {
				t.Errorf("%s has no %q line: %q", f, l, fsys[f].data)
			}
		}
	}
	for l, target := range map[string]string{"sbin": "bin", "usr/bin": "../bin", "usr/sbin": "../bin"} {
		if e := fsys[l]; e.h == nil || e.h.Linkname != target {
			t.Errorf("%s: want a symlink to %s", l, target)
		}
	}
}

// checkBusyboxBase checks img's first layer is the busybox image's.
func checkBusyboxBase(t *testing.T, img v1.Image) {
	t.Helper()
	base, err := build(t, "busybox").img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %d, %v; want busybox's and one more", len(layers), err)
	}
	d1, _ := base[0].DiffID()
	d2, _ := layers[0].DiffID()
	if d1 != d2 {
		t.Errorf("first layer %s, want busybox's %s", d2, d1)
	}
}

// step is one step of config.json's modes, all of Skyhook's required fields.
type step struct {
	Name        *string  `json:"name"`
	Path        *string  `json:"path"`
	Arguments   []string `json:"arguments"`
	Returncodes []int    `json:"returncodes"`
	OnHost      *bool    `json:"on_host"`
	Idempotence *bool    `json:"idempotence"`
	UpgradeStep *bool    `json:"upgrade_step"`
}

func TestPackageImage(t *testing.T) {
	requireBusybox(t)
	b := build(t, "test-package")
	c := checkConfig(t, b.img)
	if !slices.Equal(c.Entrypoint, []string{"/skyhook-package/run"}) || len(c.Cmd) != 0 {
		t.Errorf("config: entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(b.path) })
	if err != nil || len(m) != 1 || len(m[0].RepoTags) != 3 {
		t.Errorf("manifest %+v, %v: want one image with three tags", m, err)
	}
	checkBusyboxBase(t, b.img)
	fsys := files(t, b.img)
	if fsys["bin/sh"].h == nil {
		t.Error("no /bin/sh")
	}
	var cfg struct {
		SchemaVersion       string            `json:"schema_version"`
		PackageName         string            `json:"package_name"`
		PackageVersion      string            `json:"package_version"`
		ExpectedConfigFiles []string          `json:"expected_config_files"`
		Modes               map[string][]step `json:"modes"`
	}
	if err := json.Unmarshal(fsys["skyhook-package/config.json"].data, &cfg); err != nil {
		t.Fatalf("config.json: %v", err)
	}
	if cfg.SchemaVersion != "v1" || cfg.PackageName == "" || cfg.PackageVersion == "" || cfg.ExpectedConfigFiles == nil {
		t.Errorf("config.json: %+v", cfg)
	}
	for _, s := range stages {
		steps := cfg.Modes[s]
		if len(steps) != 1 {
			t.Errorf("config.json: mode %s has %d steps, want 1", s, len(steps))
			continue
		}
		st := steps[0]
		if st.Name == nil || st.Path == nil || st.Arguments == nil || len(st.Returncodes) == 0 || st.OnHost == nil || st.Idempotence == nil || st.UpgradeStep == nil {
			t.Errorf("config.json: mode %s: a required field is missing: %+v", s, st)
			continue
		}
		if base, ok := strings.CutSuffix(s, "-check"); ok && *st.Path != base+"_check.sh" {
			t.Errorf("mode %s: script %s, want Skyhook's check naming %s_check.sh", s, *st.Path, base)
		}
		if e := fsys["skyhook-package/skyhook_dir/"+*st.Path]; e.h == nil || e.h.Typeflag != tar.TypeReg || e.h.Mode&0o111 != 0o111 {
			t.Errorf("mode %s: script skyhook_dir/%s is missing or not executable", s, *st.Path)
		}
	}
	for _, f := range []string{"skyhook-package/run", "skyhook-package/skyhook_dir/interrupt.sh"} {
		if e := fsys[f]; e.h == nil || e.h.Mode&0o111 != 0o111 {
			t.Errorf("%s is missing or not executable", f)
		}
	}
}

// pkgRun runs the package's entrypoint with a shell.
type pkgRun struct {
	t     *testing.T
	shell string   // the shell the entrypoint runs with (it runs the scripts with "sh" from PATH)
	path  string   // PATH
	run   string   // the entrypoint
	env   []string // GANTRY_* env
}

// do runs `run args...` with extra env and returns its stdout, stderr and exit code.
func (p pkgRun) do(extra []string, args ...string) (string, string, int) {
	p.t.Helper()
	cmd := exec.Command(p.shell, append([]string{p.run}, args...)...)
	cmd.Env = append(append([]string{"PATH=" + p.path}, p.env...), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// ok runs a stage that must succeed.
func (p pkgRun) ok(extra []string, args ...string) string {
	p.t.Helper()
	out, errOut, code := p.do(extra, args...)
	if code != 0 {
		p.t.Fatalf("run %q: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPackageScripts runs the package's entrypoint and scripts taken out of the image through
// a Gantry-like sequence of stages, with the host's sh and with busybox's sh and applets alone
// (as in the image), and checks the marker files, the log and the failure behaviour.
func TestPackageScripts(t *testing.T) {
	requireBusybox(t)
	fsys := files(t, build(t, "test-package").img)
	pkg := extract(t, fsys, "skyhook-package", t.TempDir())

	bb := busyboxApplets(t)
	shells := map[string]pkgRun{"busybox": {shell: filepath.Join(bb, "sh"), path: bb}}
	if sh, err := exec.LookPath("sh"); err == nil {
		shells["host"] = pkgRun{shell: sh, path: os.Getenv("PATH")}
	}
	for shellName, p := range shells {
		t.Run(shellName, func(t *testing.T) {
			root := t.TempDir()
			markers := filepath.Join(root, "host", "tmp", "gantry-test-xyz") // created by the scripts
			cfgDir, ts := configVolume(t, filepath.Join(root, "config"))
			termLog := filepath.Join(root, "termination-log")
			if err := os.WriteFile(termLog, nil, 0o644); err != nil {
				t.Fatal(err)
			}

			p.t, p.run = t, filepath.Join(pkg, "run")
			p.env = []string{"GANTRY_PACKAGE=demo", "GANTRY_NODE=node-a", "GANTRY_MARKER_DIR=" + markers,
				"GANTRY_CONFIG_DIR=" + cfgDir, "GANTRY_TERMINATION_LOG=" + termLog}
			sc := pkgScenario{p: p, markers: markers, ts: ts, termLog: termLog,
				v1env: []string{"GANTRY_VERSION=1.0.0"}, v2env: []string{"GANTRY_VERSION=2.0.0"}}
			sc.noMarkerDir(t)
			sc.installConfigureInterrupt(t)
			sc.failingChecks(t)
			sc.upgradeReconfigure(t)
			sc.uninstall(t)
			sc.badStages(t)
		})
	}
}

// busyboxApplets is a directory of busybox's applets alone (for PATH, as in the image).
func busyboxApplets(t *testing.T) string {
	t.Helper()
	bb := t.TempDir()
	applets, err := Applets(DefaultBusyboxPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range applets {
		if err := os.Symlink(DefaultBusyboxPath(), filepath.Join(bb, a)); err != nil {
			t.Fatal(err)
		}
	}
	return bb
}

// configVolume lays out cfgDir as a ConfigMap volume with keys alpha ("1\n") and beta ("two
// words"): the files in the timestamped directory ts, reached through ..data.
func configVolume(t *testing.T, cfgDir string) (string, string) {
	t.Helper()
	ts := filepath.Join(cfgDir, "..2026_01_01_00_00_00.000000001")
	if err := os.MkdirAll(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "beta"), []byte("two words"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "alpha"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(cfgDir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/beta", filepath.Join(cfgDir, "beta")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/alpha", filepath.Join(cfgDir, "alpha")); err != nil {
		t.Fatal(err)
	}
	return cfgDir, ts
}

// pkgScenario is TestPackageScripts' sequence of stages on one shell; its steps run in order,
// each on the markers the one before left.
type pkgScenario struct {
	p                    pkgRun
	markers, ts, termLog string
	v1env, v2env         []string
}

// marker is the path of the package's marker file suffix.
func (sc pkgScenario) marker(suffix string) string {
	return filepath.Join(sc.markers, "demo."+suffix)
}

// noMarkerDir: without a marker directory apply only says so.
func (sc pkgScenario) noMarkerDir(t *testing.T) {
	t.Helper()
	p := sc.p
	// No marker directory: nothing but a line on stdout.
	if out, _, code := p.do([]string{"GANTRY_MARKER_DIR=", "GANTRY_VERSION=1.0.0"}, "apply"); code != 0 || !strings.Contains(out, "nothing to do") {
		t.Errorf("apply without GANTRY_MARKER_DIR: exit %d, %q", code, out)
	}
	if _, err := os.Stat(sc.markers); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("apply without GANTRY_MARKER_DIR touched %s: %v", sc.markers, err)
	}
}

// installConfigureInterrupt: apply, config, interrupt, post-interrupt and their checks write
// their markers.
func (sc pkgScenario) installConfigureInterrupt(t *testing.T) {
	t.Helper()
	p, v1env, marker := sc.p, sc.v1env, sc.marker
	// Install, configure, interrupt.
	p.ok(v1env, "apply")
	if got := readFile(t, marker("installed")); got != "version=1.0.0\nnode=node-a\n" {
		t.Errorf("installed: %q", got)
	}
	p.ok(v1env, "apply-check")
	p.ok(v1env, "config")
	if got := readFile(t, marker("config")); got != "alpha=1\nbeta=two words\n" {
		t.Errorf("config: %q", got)
	}
	p.ok(v1env, "config-check")
	p.ok(v1env, "interrupt", "service", "containerd", "kubelet")
	if got := readFile(t, marker("interrupts")); got != "interrupt service containerd kubelet\n" {
		t.Errorf("interrupts: %q", got)
	}
	p.ok(v1env, "post-interrupt")
	p.ok(v1env, "post-interrupt-check")
	if got := readFile(t, marker("post-interrupt")); got != "post-interrupt version=1.0.0 node=node-a\n" {
		t.Errorf("post-interrupt: %q", got)
	}
}

// failingChecks: a check of another version and GANTRY_FAIL_STAGE fail with a known last line,
// also in the termination log.
func (sc pkgScenario) failingChecks(t *testing.T) {
	t.Helper()
	p, v2env, marker := sc.p, sc.v2env, sc.marker
	// A check of another version fails (exit 1) and says why, last, also in the
	// termination log.
	_, errOut, code := p.do(v2env, "apply-check")
	if want := "apply-check: " + marker("installed") + " says version=1.0.0, want version=2.0.0"; code != 1 || lastLine(errOut) != want {
		t.Errorf("apply-check of 2.0.0: exit %d, last stderr line %q, want 1, %q", code, lastLine(errOut), want)
	}
	if got := readFile(t, sc.termLog); got != lastLine(errOut)+"\n" {
		t.Errorf("termination log %q, want the last stderr line", got)
	}

	// GANTRY_FAIL_STAGE fails that stage (exit 2) with a known last line.
	for _, s := range []string{"upgrade", "config-check"} {
		_, errOut, code := p.do(append(v2env, "GANTRY_FAIL_STAGE="+s), s)
		want := s + ": failing on purpose (GANTRY_FAIL_STAGE=" + s + ")"
		if code != 2 || lastLine(errOut) != want {
			t.Errorf("GANTRY_FAIL_STAGE=%s: exit %d, last stderr line %q, want 2, %q", s, code, lastLine(errOut), want)
		}
		if got := readFile(t, sc.termLog); got != want+"\n" {
			t.Errorf("GANTRY_FAIL_STAGE=%s: termination log %q", s, got)
		}
	}
	if got := readFile(t, marker("installed")); !strings.HasPrefix(got, "version=1.0.0\n") {
		t.Errorf("a failed upgrade changed installed: %q", got)
	}
	// Other stages are not affected by GANTRY_FAIL_STAGE.
	p.ok([]string{"GANTRY_VERSION=1.0.0", "GANTRY_FAIL_STAGE=uninstall"}, "apply-check")
}

// upgradeReconfigure: upgrade, then a config change the config check sees until config runs.
func (sc pkgScenario) upgradeReconfigure(t *testing.T) {
	t.Helper()
	p, v2env, marker := sc.p, sc.v2env, sc.marker
	// Upgrade, reconfigure with changed config.
	p.ok(v2env, "upgrade")
	if got := readFile(t, marker("installed")); got != "version=2.0.0\nnode=node-a\nupgraded_from=1.0.0\n" {
		t.Errorf("installed after upgrade: %q", got)
	}
	p.ok(v2env, "upgrade-check")
	if err := os.WriteFile(filepath.Join(sc.ts, "beta"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := p.do(v2env, "config-check"); code != 1 || !strings.Contains(lastLine(errOut), "does not match") {
		t.Errorf("config-check after a config change: exit %d, %q", code, errOut)
	}
	p.ok(v2env, "config")
	p.ok(v2env, "config-check")
}

// uninstall removes the markers; the log lists every stage run; checks after it say so.
func (sc pkgScenario) uninstall(t *testing.T) {
	t.Helper()
	p, v2env, marker := sc.p, sc.v2env, sc.marker
	// Uninstall.
	p.ok(v2env, "uninstall")
	for _, f := range []string{"installed", "config"} {
		if _, err := os.Stat(marker(f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after uninstall: %v", f, err)
		}
	}
	p.ok(v2env, "uninstall-check")

	wantLog := []string{"apply 1.0.0", "apply-check 1.0.0", "config 1.0.0", "config-check 1.0.0", "interrupt 1.0.0",
		"post-interrupt 1.0.0", "post-interrupt-check 1.0.0", "apply-check 2.0.0", "upgrade 2.0.0", "config-check 2.0.0",
		"apply-check 1.0.0", "upgrade 2.0.0", "upgrade-check 2.0.0", "config-check 2.0.0", "config 2.0.0", "config-check 2.0.0",
		"uninstall 2.0.0", "uninstall-check 2.0.0"}
	if got := strings.Split(strings.TrimSpace(readFile(t, marker("log"))), "\n"); !slices.Equal(got, wantLog) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLog, "\n"))
	}
	// The check of a removed package fails now.
	if _, _, code := p.do(v2env, "uninstall-check"); code != 0 {
		t.Errorf("uninstall-check twice: exit %d", code)
	}
	if _, _, code := p.do(v2env, "apply-check"); code != 1 {
		t.Errorf("apply-check after uninstall: exit %d, want 1", code)
	}
}

// badStages: an unknown or missing stage exits 64 with a line naming it.
func (sc pkgScenario) badStages(t *testing.T) {
	t.Helper()
	p, v1env := sc.p, sc.v1env
	// Unknown or missing stage: exit 64 and a clear line.
	for _, args := range [][]string{{"bogus"}, {"apply;rm"}, {}} {
		_, errOut, code := p.do(v1env, args...)
		if code != 64 || !strings.HasPrefix(lastLine(errOut), "run: ") || (len(args) > 0 && !strings.Contains(errOut, `unknown stage "`+args[0]+`"`)) {
			t.Errorf("run %q: exit %d, stderr %q; want 64 and a line naming the stage", args, code, errOut)
		}
	}
}

// server is a test server process.
type server struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, bin string, env []string, args ...string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan error, 1)}
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { _ = s.cmd.Process.Kill() })
	return s
}

// stop sends SIGTERM and wants exit 0.
func (s *server) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit 0\n%s", err, s.out)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("still running 10s after SIGTERM\n%s", s.out)
	}
}

// exited waits for the process to exit by itself and returns its exit code.
func (s *server) exited(t *testing.T) int {
	t.Helper()
	select {
	case err := <-s.done:
		if s.cmd.ProcessState == nil {
			t.Fatalf("did not run: %v\n%s", err, s.out)
		}
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		t.Fatalf("still running after 10s\n%s", s.out)
		return -1
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// get waits until url answers (the server starting) and returns the status and body.
func (s *server) get(t *testing.T, url string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		select {
		case err := <-s.done:
			t.Fatalf("GET %s: the server exited: %v\n%s", url, err, s.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v\n%s", url, err, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverBinary is the image's server at /<file>, taken out of the image after checking its
// config (busybox-based, entrypoint, exposed port); without busybox, only the program
// built as the command builds it.
func serverBinary(t *testing.T, short, dir, file, port string) string {
	t.Helper()
	tmp := t.TempDir()
	if _, err := CheckBusybox(DefaultBusyboxPath(), runtime.GOARCH); err != nil {
		t.Logf("image not checked (busybox-based, and %v); testing the program alone", err)
		bin, err := NewBuilder(tmp).GoBinary(dir)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tmp, file)
		if err := os.WriteFile(p, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := build(t, short)
	c := checkConfig(t, b.img)
	if !slices.Equal(c.Entrypoint, []string{"/" + file}) || len(c.Cmd) != 0 || len(c.ExposedPorts) != 1 {
		t.Errorf("config: entrypoint %q cmd %q ports %v", c.Entrypoint, c.Cmd, c.ExposedPorts)
	}
	if _, ok := c.ExposedPorts[port+"/tcp"]; !ok {
		t.Errorf("exposed ports %v, want %s/tcp", c.ExposedPorts, port)
	}
	checkBusyboxBase(t, b.img)
	fsys := files(t, b.img)
	if e := fsys[file]; e.h == nil || e.h.Mode != 0o755 {
		t.Fatalf("/%s missing or not 0755", file)
	}
	return extract(t, fsys, file, tmp)
}

func TestPerformer(t *testing.T) {
	bin := serverBinary(t, "test-performer", "performer", "performer", "9090")
	host, _ := os.Hostname()
	if out, _ := exec.Command(bin, "-h").CombinedOutput(); !strings.Contains(string(out), "(default 9090)") {
		t.Errorf("-h does not show the default port 9090:\n%s", out)
	}

	grpc, health := freePort(t), freePort(t)
	s := start(t, bin, []string{"GRPC_PORT=" + strconv.Itoa(grpc), "PERFORMER_HEALTH_PORT=" + strconv.Itoa(health),
		"PERFORMER_VERSION=9.9.9", "PERFORMER_ALLOC_MB=16"}, "-listen", "127.0.0.1")
	if code, body := s.get(t, fmt.Sprintf("http://127.0.0.1:%d/", grpc)); code != 200 || body != "gantry test performer "+host+" version 9.9.9\n" {
		t.Errorf("GET /: %d %q", code, body)
	}
	for _, p := range []int{grpc, health} {
		if code, body := s.get(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", p)); code != 200 || body != "ok\n" {
			t.Errorf("GET :%d/healthz: %d %q", p, code, body)
		}
	}
	if code, _ := s.get(t, fmt.Sprintf("http://127.0.0.1:%d/nope", grpc)); code != 404 {
		t.Errorf("GET /nope: %d", code)
	}
	if !strings.Contains(s.out.String(), "allocated and touched 16 MiB") {
		t.Errorf("PERFORMER_ALLOC_MB=16: no allocation logged:\n%s", s.out)
	}
	s.stop(t)

	// The port from the flag; the default version.
	grpc = freePort(t)
	s = start(t, bin, nil, "-grpc-port", strconv.Itoa(grpc), "-listen", "127.0.0.1")
	if code, body := s.get(t, fmt.Sprintf("http://127.0.0.1:%d/", grpc)); code != 200 || body != "gantry test performer "+host+" version 1.0.0\n" {
		t.Errorf("GET /: %d %q", code, body)
	}
	s.stop(t)

	s = start(t, bin, []string{"PERFORMER_FAIL_AFTER_START=1", "GRPC_PORT=" + strconv.Itoa(freePort(t))})
	if code := s.exited(t); code != 1 || lastLine(s.out.String()) != "performer: failing on purpose (PERFORMER_FAIL_AFTER_START=1)" {
		t.Errorf("PERFORMER_FAIL_AFTER_START=1: exit %d, output %q", code, s.out)
	}

	// PERFORMER_LISTEN_DELAY: not listening during the wait; SIGTERM then exits 0 at once.
	grpc = freePort(t)
	s = start(t, bin, []string{"PERFORMER_LISTEN_DELAY=60", "GRPC_PORT=" + strconv.Itoa(grpc)}, "-listen", "127.0.0.1")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.out.String(), "waiting 60s before listening"); {
		if time.Now().After(deadline) {
			t.Fatalf("PERFORMER_LISTEN_DELAY=60: no wait logged:\n%s", s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(grpc), time.Second); err == nil {
		c.Close()
		t.Error("PERFORMER_LISTEN_DELAY=60: listening during the wait")
	}
	s.stop(t)
	if lastLine(s.out.String()) != "performer: shutting down before listening" {
		t.Errorf("PERFORMER_LISTEN_DELAY=60 then SIGTERM: output %q", s.out)
	}
}

func TestModelServer(t *testing.T) {
	bin := serverBinary(t, "test-model-server", "modelserver", "model-server", "8000")
	base := func(port int) string { return fmt.Sprintf("http://127.0.0.1:%d", port) }

	// As a preset runs it: --served-model-name and --port=$(PORT) expanded, vLLM arguments
	// it ignores, MODEL_NAME also set.
	port := freePort(t)
	s := start(t, bin, []string{"MODEL_NAME=other", "PORT=1"}, "--served-model-name=llama-test", "--port="+strconv.Itoa(port),
		"--host", "127.0.0.1", "--gpu-memory-utilization", "0.9", "--trust-remote-code", "--model=meta-llama/Llama-3.1-8B-Instruct")
	if code, body := s.get(t, base(port)+"/health"); code != 200 {
		t.Errorf("GET /health: %d %q", code, body)
	}
	code, body := s.get(t, base(port)+"/v1/models")
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &models); code != 200 || err != nil || models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "llama-test" || models.Data[0].Object != "model" {
		t.Errorf("GET /v1/models: %d %s %v", code, body, err)
	}
	if !strings.Contains(body, `"owned_by":"gantry"`) {
		t.Errorf("GET /v1/models: no owned_by gantry: %s", body)
	}
	chat := func(req string) (int, string) {
		resp, err := http.Post(base(port)+"/v1/chat/completions", "application/json", strings.NewReader(req))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body = chat(`{"model":"llama-test","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"first"},` +
		`{"role":"assistant","content":"ok"},{"role":"user","content":"hello gantry"}]}`)
	var completion struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Role, Content string } `json:"message"`
			FinishReason string                         `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &completion); code != 200 || err != nil || completion.Object != "chat.completion" || completion.Model != "llama-test" ||
		len(completion.Choices) != 1 || completion.Choices[0].Message.Role != "assistant" || completion.Choices[0].Message.Content != "hello gantry" {
		t.Errorf("chat completion: %d %s %v", code, body, err)
	}
	// Content as parts, no model named.
	if code, body = chat(`{"messages":[{"role":"user","content":[{"type":"text","text":"in "},{"type":"text","text":"parts"}]}]}`); code != 200 || !strings.Contains(body, `"content":"in parts"`) {
		t.Errorf("chat completion of parts: %d %s", code, body)
	}
	if code, body = chat(`{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}`); code != 404 || !strings.Contains(body, "NotFoundError") {
		t.Errorf("another model: %d %s", code, body)
	}
	if code, body = chat(`{"model":"llama-test","stream":true,"messages":[{"role":"user","content":"streamed"}]}`); code != 200 ||
		!strings.Contains(body, `"content":"streamed"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("streamed chat completion: %d %s", code, body)
	}
	s.stop(t)

	// --model X (space-separated) with the port from env PORT; an unexpanded $(PORT) falls
	// back to PORT; MODEL_NAME alone; nothing: test-model.
	for _, c := range []struct {
		args  []string
		env   string
		model string
	}{
		{[]string{"--model", "meta/x", "--host", "127.0.0.1"}, "MODEL_NAME=ignored", "meta/x"},
		{[]string{"--port=$(PORT)", "--host=127.0.0.1", "--tensor-parallel-size", "2"}, "MODEL_NAME=from-env", "from-env"},
		{[]string{"--host", "127.0.0.1"}, "", "test-model"},
	} {
		port := freePort(t)
		env := []string{"PORT=" + strconv.Itoa(port)}
		if c.env != "" {
			env = append(env, c.env)
		}
		s := start(t, bin, env, c.args...)
		if code, body := s.get(t, base(port)+"/v1/models"); code != 200 || !strings.Contains(body, `"id":"`+c.model+`"`) {
			t.Errorf("%q %s: /v1/models %d %s, want model %s", c.args, c.env, code, body, c.model)
		}
		s.stop(t)
	}

	s = start(t, bin, []string{"MODEL_SERVER_FAIL_AFTER_START=1"})
	if code := s.exited(t); code != 1 || !strings.Contains(s.out.String(), "failing on purpose") {
		t.Errorf("MODEL_SERVER_FAIL_AFTER_START=1: exit %d, %q", code, s.out)
	}
}

// The model server as KAITO's multi-node vLLM group runs it (its ray.go; Gantry's
// internal/workspace/ray.go): the image links ray, python3 and multi-node-serving.sh to it;
// vLLM's leader starts the Ray head and waits for the group, a worker joins it, the leader
// serves through python3 inference_api.py, and KAITO's health check passes on both, then
// fails the leader's liveness once the worker is gone.
func TestModelServerRay(t *testing.T) {
	bin := serverBinary(t, "test-model-server", "modelserver", "model-server", "8000")
	if _, err := CheckBusybox(DefaultBusyboxPath(), runtime.GOARCH); err == nil {
		fsys := files(t, build(t, "test-model-server").img)
		for _, l := range modelServerLinks {
			if e := fsys[l]; e.h == nil || e.h.Typeflag != tar.TypeSymlink || e.h.Linkname != "/model-server" {
				t.Errorf("/%s is not a link to /model-server", l)
			}
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"ray", "python3", "multi-node-serving.sh"} {
		if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := func(name string) string { return filepath.Join(dir, name) }
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp, "RAY_TEST_POLL=100ms", "GROUP_SIZE=2"}
	run := func(extra []string, name string, args ...string) (int, string) {
		t.Helper()
		c := exec.Command(cmd(name), args...)
		c.Env = append(append([]string{"PATH=" + os.Getenv("PATH")}, env...), extra...)
		out, _ := c.CombinedOutput()
		return c.ProcessState.ExitCode(), string(out)
	}
	t.Cleanup(func() { run(nil, "ray", "stop") })
	rayPort := strconv.Itoa(freePort(t))
	head := "127.0.0.1:" + rayPort

	leader := start(t, cmd("multi-node-serving.sh"), append(env, "POD_INDEX=0"), "leader", "--ray_cluster_size=2", "--ray_port="+rayPort, "--ray_init_timeout=60")
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(leader.out.String(), "1/2 is active"); {
		if time.Now().After(deadline) {
			t.Fatalf("the leader does not wait for the worker:\n%s", leader.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, out := run(nil, "ray", "status", "--address="+head); code != 0 || !strings.Contains(out, "Active: 1 node(s)") {
		t.Errorf("ray status with the head alone: %d %s", code, out)
	}
	worker := start(t, cmd("multi-node-serving.sh"), append(env, "POD_INDEX=1"), "worker", "--ray_address=127.0.0.1", "--ray_port="+rayPort)
	if code := leader.exited(t); code != 0 || !strings.Contains(leader.out.String(), "All ray workers are active") {
		t.Fatalf("leader: exit %d\n%s", code, leader.out)
	}
	if code, out := run(nil, "ray", "status", "--address="+head); code != 0 || !strings.Contains(out, "Active: 2 node(s)") {
		t.Errorf("ray status with the group: %d %s", code, out)
	}

	vllm := freePort(t)
	srv := start(t, cmd("python3"), append(env, "POD_INDEX=0"), "/workspace/vllm/inference_api.py", "--served-model-name=big", "--port="+strconv.Itoa(vllm), "--host", "127.0.0.1",
		"--pipeline-parallel-size=2", "--distributed-executor-backend=ray")
	if code, body := srv.get(t, fmt.Sprintf("http://127.0.0.1:%d/v1/models", vllm)); code != 200 || !strings.Contains(body, `"id":"big"`) {
		t.Errorf("the leader's server: %d %s", code, body)
	}
	check := "/workspace/vllm/multi-node-health-check.py"
	for _, c := range []struct {
		name  string
		index string
		args  []string
		want  int
	}{
		{"leader readiness", "0", []string{"readiness", "--leader-address=127.0.0.1", "--vllm-port=" + strconv.Itoa(vllm)}, 0},
		{"leader liveness", "0", []string{"liveness", "--leader-address=127.0.0.1", "--ray-port=" + rayPort}, 0},
		{"worker readiness (always)", "1", []string{"readiness", "--leader-address=127.0.0.1", "--vllm-port=1"}, 0},
		{"leader readiness, nothing on the port", "0", []string{"readiness", "--leader-address=127.0.0.1", "--vllm-port=" + strconv.Itoa(freePort(t))}, 1},
		{"no mode", "0", nil, 2},
	} {
		if code, out := run([]string{"POD_INDEX=" + c.index}, "python3", append([]string{check}, c.args...)...); code != c.want {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.want, out)
		}
	}

	// The worker leaves: the leader's liveness fails (a lost worker), the worker's passes.
	worker.stop(t)
	if !strings.Contains(worker.out.String(), "Worker: Ray runtime started with head address "+head) {
		t.Errorf("worker output:\n%s", worker.out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out := run([]string{"POD_INDEX=0"}, "python3", check, "liveness", "--leader-address=127.0.0.1", "--ray-port="+rayPort)
		if code == 1 && strings.Contains(out, "1 of 2 Ray nodes alive") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader liveness without the worker: exit %d\n%s", code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := run([]string{"POD_INDEX=1"}, "python3", check, "liveness", "--leader-address=127.0.0.1", "--ray-port="+rayPort); code != 0 {
		t.Errorf("a worker's liveness: exit %d, want 0 (it is the leader's)", code)
	}
	srv.stop(t)

	// ray stop ends the head; a worker cannot join then, and the script retries until its
	// timeout.
	if code, out := run(nil, "ray", "stop"); code != 0 || !strings.Contains(out, "Stopped 1 Ray processes") {
		t.Errorf("ray stop: %d %s", code, out)
	}
	if err := waitClosed(head, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, out := run(nil, "multi-node-serving.sh", "worker", "--ray_address=127.0.0.1", "--ray_port="+rayPort, "--ray_init_timeout=10"); code != 1 ||
		!strings.Contains(out, "Ray worker starts timeout") || strings.Count(out, "Waiting until the ray worker is active") != 2 {
		t.Errorf("worker without a head: exit %d\n%s", code, out)
	}
	if code, out := run(nil, "python3", "-c", "import ray"); code != 2 || !strings.Contains(out, "runs only") {
		t.Errorf("python3 -c: exit %d %s", code, out)
	}
}

// waitClosed waits until addr refuses connections.
func waitClosed(addr string, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still accepts connections", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
