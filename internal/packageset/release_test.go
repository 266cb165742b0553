package packageset

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// testSigner is a key made for one test: its PEM public key and a sign function as cosign
// sign-blob signs (ECDSA: ASN.1 DER over SHA-256; ed25519: the message itself), base64.
type testSigner struct {
	pub  string
	sign func(payload []byte) string
}

func ecdsaSigner(t *testing.T, curve elliptic.Curve) testSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{pub: string(pub), sign: func(payload []byte) string {
		h := sha256.Sum256(payload)
		sig, err := ecdsa.SignASN1(rand.Reader, k, h[:])
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(sig)
	}}
}

func ed25519Signer(t *testing.T) testSigner {
	t.Helper()
	pubKey, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(pubKey)
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{pub: string(pub), sign: func(payload []byte) string {
		sig, err := k.Sign(rand.Reader, payload, crypto.Hash(0))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(sig)
	}}
}

func releasePackages() []v1alpha1.Package {
	return []v1alpha1.Package{
		{Name: "tuned", Version: "1.2", Image: "ghcr.io/acme/tuned"},
		{Name: "driver", Version: "550.54.15", Image: "ghcr.io/acme/driver:latest"},
		{Name: "agent", Version: "2.0.0", Image: "ghcr.io/acme/agent@sha256:" + strings.Repeat("a", 64)},
	}
}

// The payload's exact bytes: the format line, signedAt, then the packages by name with the
// image the stages run (the version as its tag; a digest as written). Order does not matter.
func TestReleasePayload(t *testing.T) {
	want := "gantry.dev/release/v1\n" +
		"signedAt 2026-11-26T15:00:00Z\n" +
		"package agent 2.0.0 ghcr.io/acme/agent@sha256:" + strings.Repeat("a", 64) + "\n" +
		"package driver 550.54.15 ghcr.io/acme/driver:550.54.15\n" +
		"package tuned 1.2 ghcr.io/acme/tuned:1.2\n"
	pkgs := releasePackages()
	if got := string(ReleasePayload(pkgs, "2026-11-26T15:00:00Z")); got != want {
		t.Errorf("payload:\n%s\nwant:\n%s", got, want)
	}
	pkgs[0], pkgs[2] = pkgs[2], pkgs[0]
	if got := string(ReleasePayload(pkgs, "2026-11-26T15:00:00Z")); got != want {
		t.Errorf("reordered packages change the payload:\n%s", got)
	}
}

// CheckRelease: a good signature (ECDSA P-256, ed25519) passes; a changed package, another
// key, a changed signedAt, garbage and unsupported keys are ReleaseNotVerified in the
// verifier's words; a verified release beyond its window is ReleaseStale naming age and window.
func TestCheckRelease(t *testing.T) {
	const at = "2026-11-26T15:00:00Z"
	signedAt, _ := time.Parse(SignedAtLayout, at)
	ec, ed, other := ecdsaSigner(t, elliptic.P256()), ed25519Signer(t), ecdsaSigner(t, elliptic.P256())
	p384 := ecdsaSigner(t, elliptic.P384())
	spec := func(s testSigner, pkgs []v1alpha1.Package, signedAtSigned, signedAtSpec string, window time.Duration) *v1alpha1.PackageSetSpec {
		r := &v1alpha1.Release{PublicKey: s.pub, Signature: s.sign(ReleasePayload(pkgs, signedAtSigned)), SignedAt: signedAtSpec}
		if window > 0 {
			r.FreshnessWindow = &metav1.Duration{Duration: window}
		}
		return &v1alpha1.PackageSetSpec{Packages: releasePackages(), Rollout: &v1alpha1.Rollout{Release: r}}
	}
	changed := releasePackages()
	changed[1].Version = "550.54.14"
	now := signedAt.Add(time.Hour)
	for _, tc := range []struct {
		name         string
		spec         *v1alpha1.PackageSetSpec
		reason, text string
	}{
		{"no release", &v1alpha1.PackageSetSpec{Packages: releasePackages()}, "", ""},
		{"ECDSA P-256 verifies", spec(ec, releasePackages(), at, at, 0), "", ""},
		{"ed25519 verifies", spec(ed, releasePackages(), at, at, 0), "", ""},
		{"within the window", spec(ec, releasePackages(), at, at, 2*time.Hour), "", ""},
		{"packages changed since signing", spec(ec, changed, at, at, 0), ReasonReleaseNotVerified, "invalid signature"},
		{"ed25519, packages changed", spec(ed, changed, at, at, 0), ReasonReleaseNotVerified, "failed to verify signature"},
		{"signedAt changed since signing", spec(ec, releasePackages(), at, "2026-11-27T15:00:00Z", 0), ReasonReleaseNotVerified, "invalid signature"},
		{"beyond the window", spec(ec, releasePackages(), at, at, 30*time.Minute), ReasonReleaseStale, "is 1h0m0s old, beyond its freshness window of 30m0s"},
		{"not verified wins over stale", spec(ec, changed, at, at, time.Minute), ReasonReleaseNotVerified, "invalid signature"},
		// signedAt 2026-11-26T16:04:00Z is 4 min after now: within the clock skew; 6 min: refused.
		{"signed 4 min in the future: clock skew", spec(ec, releasePackages(), "2026-11-26T16:04:00Z", "2026-11-26T16:04:00Z", 0), "", ""},
		{"signed 6 min in the future", spec(ec, releasePackages(), "2026-11-26T16:06:00Z", "2026-11-26T16:06:00Z", time.Hour), ReasonReleaseNotVerified, "signedAt 2026-11-26T16:06:00Z is 6m0s in the future (now 2026-11-26T16:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckRelease(tc.spec, now)
			if tc.reason == "" {
				if got != nil {
					t.Fatalf("refused: %+v", got)
				}
				return
			}
			if got == nil || got.Reason != tc.reason || !strings.Contains(got.Message, tc.text) {
				t.Fatalf("got %+v, want %s with %q", got, tc.reason, tc.text)
			}
		})
	}
	// Another key signed it, the signature is garbage, the key is not one we take.
	s := spec(ec, releasePackages(), at, at, 0)
	s.Rollout.Release.PublicKey = other.pub
	wantRefusal(t, CheckRelease(s, now), "invalid signature")
	s = spec(ec, releasePackages(), at, at, 0)
	s.Rollout.Release.Signature = "not base64!"
	wantRefusal(t, CheckRelease(s, now), "signature is not base64")
	s = spec(p384, releasePackages(), at, at, 0)
	wantRefusal(t, CheckRelease(s, now), "ECDSA curve P-384 is not supported")
	s.Rollout.Release.PublicKey = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"
	wantRefusal(t, CheckRelease(s, now), "public key:")
}

func wantRefusal(t *testing.T, r *ReleaseRefusal, text string) {
	t.Helper()
	if r == nil || r.Reason != ReasonReleaseNotVerified || !strings.Contains(r.Message, text) {
		t.Errorf("got %+v, want %s with %q", r, ReasonReleaseNotVerified, text)
	}
}

// A release not verified: no stage Job on any node, every node waits, the set is Stalled
// (ReleaseNotVerified) and erroring; once it verifies the set completes.
func TestPlanReleaseNotVerified(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.Release = &ReleaseRefusal{Reason: ReasonReleaseNotVerified, Message: "release not verified: invalid signature"}
	for i := 0; i < 5; i++ {
		d := s.pass()
		s.settle()
		if jobs := s.pendingJobs(); len(jobs) > 0 || len(s.ran) > 0 {
			t.Fatalf("pass %d: stages ran: %v", i, s.ran)
		}
		wantStalled(t, d, ReasonReleaseNotVerified)
	}
	s.facts.Release = nil
	s.run(v1alpha1.StatusComplete)
}

// A stale release: nodes already converged stay, a node already activating finishes, no new
// node starts; the set is Stalled (ReleaseStale) while a node waits, Ready once none needs it.
func TestPlanReleaseStale(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(1))}
	// node-0 converges, node-1 starts; then the release goes stale.
	for i := 0; i < 100 && (s.nodes["node-1"].rec == nil || len(s.ran["node-1"]) == 0); i++ {
		s.pass()
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	if len(s.ran["node-1"]) == 0 || len(s.ran["node-2"]) > 0 {
		t.Fatalf("setup: ran %v", s.ran)
	}
	s.facts.Release = &ReleaseRefusal{Reason: ReasonReleaseStale, Message: "release signed at ... is 2h old"}
	var d Decision
	for i := 0; i < 40; i++ {
		d = s.pass()
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	if len(s.ran["node-2"]) > 0 {
		t.Fatalf("a stale release started node-2: %v", s.ran["node-2"])
	}
	for _, n := range []string{"node-0", "node-1"} {
		if r := s.nodes[n].rec; r == nil || r.Rollout != v1alpha1.RolloutConverged {
			t.Errorf("%s: %+v, want Converged (converged stay, activating finish)", n, r)
		}
	}
	wantStalled(t, d, ReasonReleaseStale)
	// Without node-2 (deselected), nothing needs the stale release: complete and Ready.
	delete(s.nodes, "node-2")
	d = s.pass()
	if d.Status != v1alpha1.StatusComplete || d.Release != nil {
		t.Errorf("status %s, release %+v: want complete with nothing refused", d.Status, d.Release)
	}
}

func wantStalled(t *testing.T, d Decision, reason string) {
	t.Helper()
	if d.Status != v1alpha1.StatusErroring {
		t.Errorf("status %s, want erroring", d.Status)
	}
	for _, c := range d.Conditions {
		if c.Type == v1alpha1.ConditionStalled && (c.Status != metav1.ConditionTrue || c.Reason != reason) {
			t.Errorf("Stalled %s %s %q, want True %s", c.Status, c.Reason, c.Message, reason)
		}
		if c.Type == v1alpha1.ConditionReady && c.Reason != reason {
			t.Errorf("Ready reason %s, want %s", c.Reason, reason)
		}
	}
}
