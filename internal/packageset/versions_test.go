package packageset

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Versions as Skyhook users write them: MAJOR.MINOR compares as MAJOR.MINOR.0 (numerically,
// not as text: 1.10 > 1.9), pre-releases and builds keep their semver order.
func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.2", "1.2.0", 0},
		{"1.10", "1.9", 1},
		{"1.2", "1.2.1", -1},
		{"2.0-rc.1", "2.0", -1},
		{"1.2+build.7", "1.2.0", 0},
		{"0.9.12", "1.0", -1},
	} {
		got, err := compareVersions(tc.a, tc.b)
		if err != nil || got != tc.want {
			t.Errorf("compare(%s, %s) = %d, %v; want %d", tc.a, tc.b, got, err, tc.want)
		}
	}
	for _, bad := range []string{"1", "v1.2", "1.2.3.4", "01.2", ""} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) accepted", bad)
		}
	}
}

// An image without a tag or digest runs with the version as its tag; tags, digests and
// registry ports are left alone. Build metadata ('+', not allowed in an OCI tag) is tagged
// with '_', as Helm does; the version itself is kept as written.
func TestImageOf(t *testing.T) {
	for _, tc := range []struct {
		name, image, version, want string
	}{
		{"no tag: the version is the tag", "ghcr.io/acme/tuned", "1.2", "ghcr.io/acme/tuned:1.2"},
		{"a written tag is replaced by the version (Skyhook)", "ghcr.io/acme/tuned:6.0", "1.2", "ghcr.io/acme/tuned:1.2"},
		{"a written tag equal to the version", "ghcr.io/acme/tuned:1.2", "1.2", "ghcr.io/acme/tuned:1.2"},
		{"digest kept", "ghcr.io/acme/tuned@sha256:0123abcd", "1.2", "ghcr.io/acme/tuned@sha256:0123abcd"},
		{"registry port is not a tag", "localhost:5000/tuned", "1.2", "localhost:5000/tuned:1.2"},
		{"registry port and tag", "localhost:5000/tuned:7", "1.2", "localhost:5000/tuned:1.2"},
		{"bare name", "busybox", "1.2", "busybox:1.2"},
		{"no version: image as is", "ghcr.io/acme/tuned", "", "ghcr.io/acme/tuned"},
		{"pre-release: '-' is a valid tag character", "ghcr.io/acme/tuned", "2.0.0-rc.1", "ghcr.io/acme/tuned:2.0.0-rc.1"},
		{"build metadata: '+' tagged as '_'", "ghcr.io/acme/tuned", "1.2.3+build.5", "ghcr.io/acme/tuned:1.2.3_build.5"},
		{"pre-release and build metadata", "ghcr.io/acme/tuned", "2.0.0-rc.1+sha.5114f85", "ghcr.io/acme/tuned:2.0.0-rc.1_sha.5114f85"},
		{"MAJOR.MINOR with build metadata", "localhost:5000/tuned", "1.2+7", "localhost:5000/tuned:1.2_7"},
		{"build metadata, tag in the image: the version's", "ghcr.io/acme/tuned:6.0", "1.2.3+build.5", "ghcr.io/acme/tuned:1.2.3_build.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ImageOf(v1alpha1.Package{Name: "tuned", Version: tc.version, Image: tc.image})
			if got != tc.want {
				t.Errorf("ImageOf(%q at %q) = %q, want %q", tc.image, tc.version, got, tc.want)
			}
			// Whatever the version, a tag ImageOf adds is a valid OCI tag.
			if tag, ok := strings.CutPrefix(got, tc.image+":"); ok && !ociTag.MatchString(tag) {
				t.Errorf("tag %q is not a valid OCI tag", tag)
			}
		})
	}
	if w := WantOf(v1alpha1.Package{Name: "tuned", Version: "1.2", Image: "ghcr.io/acme/tuned"}); w.Image != "ghcr.io/acme/tuned:1.2" || w.Version != "1.2" {
		t.Errorf("WantOf: image %q version %q (the version is kept as written)", w.Image, w.Version)
	}
	if w := WantOf(v1alpha1.Package{Name: "tuned", Version: "1.2.3+build.5", Image: "ghcr.io/acme/tuned"}); w.Image != "ghcr.io/acme/tuned:1.2.3_build.5" || w.Version != "1.2.3+build.5" {
		t.Errorf("WantOf: image %q version %q (the version is kept as written)", w.Image, w.Version)
	}
}

// ociTag is the OCI distribution spec's tag grammar.
var ociTag = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// Explicit uninstall (Skyhook's uninstall.apply): such a package is not wanted, so the
// machine treats it as removed; uninstall.apply without enabled does not uninstall.
func TestWantsOf(t *testing.T) {
	pkgs := []v1alpha1.Package{
		{Name: "keep", Version: "1.0.0", Image: "i"},
		{Name: "gone", Version: "1.0.0", Image: "i", Uninstall: &v1alpha1.Uninstall{Enabled: true, Apply: true}},
		{Name: "not-enabled", Version: "1.0.0", Image: "i", Uninstall: &v1alpha1.Uninstall{Apply: true}},
	}
	var names []string
	for _, w := range WantsOf(pkgs) {
		names = append(names, w.Name)
	}
	if len(names) != 2 || names[0] != "keep" || names[1] != "not-enabled" {
		t.Errorf("wants %v", names)
	}
	if len(WantsOf(pkgs[1:2])) != 0 {
		t.Errorf("a set whose every package is uninstalled wants nothing")
	}
}
