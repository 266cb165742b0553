package reconciler

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// releaseKey is an ECDSA P-256 key made for the test (as cosign generate-key-pair makes).
type releaseKey struct {
	k   *ecdsa.PrivateKey
	pub string
}

func newReleaseKey(t *testing.T) releaseKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return releaseKey{k: k, pub: string(pub)}
}

// release signs the release of pkgs at signedAt as cosign sign-blob does (ASN.1 DER over SHA-256).
func (r releaseKey) release(t *testing.T, pkgs []v1alpha1.Package, signedAt time.Time) *v1alpha1.Release {
	t.Helper()
	at := signedAt.UTC().Format(packageset.SignedAtLayout)
	h := sha256.Sum256(packageset.ReleasePayload(pkgs, at))
	sig, err := ecdsa.SignASN1(rand.Reader, r.k, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.Release{PublicKey: r.pub, Signature: base64.StdEncoding.EncodeToString(sig), SignedAt: at}
}

// A set whose release does not verify (packages changed since signing) never creates a stage
// Job and is Stalled with ReleaseNotVerified in the verifier's words; signed again it
// completes. A stale release (beyond freshnessWindow) starts no node: Stalled, ReleaseStale.
func TestPackageSetReleaseSigning(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-rel-%d", seq.Add(1))
	e.gpuNodes(t, pool, 2)
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}}
	key := newReleaseKey(t)
	pkgs := []v1alpha1.Package{pkgTool("1.1.0")}
	signed := key.release(t, []v1alpha1.Package{pkgTool("1.0.0")}, time.Now()) // signed for 1.0.0, not 1.1.0
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{NodeSelector: sel,
		Packages: pkgs, AdditionalTolerations: gpuToleration, Rollout: &v1alpha1.Rollout{Release: signed}}}
	e.createSet(t, set)
	s := e.waitSet(t, set.Name, "Stalled ReleaseNotVerified", func(p *v1alpha1.PackageSet) bool {
		c := setCondition(p, v1alpha1.ConditionStalled)
		return c.Status == metav1.ConditionTrue && c.Reason == packageset.ReasonReleaseNotVerified
	})
	if m := setCondition(s, v1alpha1.ConditionReady).Message; !strings.Contains(m, "invalid signature") || !strings.Contains(m, "dcgm-tool@1.1.0") {
		t.Errorf("Ready message %q: want the verifier's words and the release", m)
	}
	// A few more passes (every Poll while not complete): still no Job on any node.
	time.Sleep(2 * packageset.Poll)
	if jobs := e.setPods(t, set.Name); len(jobs) != 0 {
		t.Fatalf("a release that does not verify created %d stage Jobs, e.g. %s", len(jobs), jobs[0].Name)
	}
	// Signed again for what the spec asks: the set completes.
	e.updateSet(t, set.Name, func(p *v1alpha1.PackageSet) { p.Spec.Rollout.Release = key.release(t, p.Spec.Packages, time.Now()) })
	e.waitSet(t, set.Name, "complete", statusIs(v1alpha1.StatusComplete))

	// A stale release: signed two hours ago, a one-hour window.
	stale := key.release(t, []v1alpha1.Package{pkgTool("1.2.0")}, time.Now().Add(-2*time.Hour))
	stale.FreshnessWindow = &metav1.Duration{Duration: time.Hour}
	e.updateSet(t, set.Name, func(p *v1alpha1.PackageSet) {
		p.Spec.Packages = []v1alpha1.Package{pkgTool("1.2.0")}
		p.Spec.Rollout.Release = stale
	})
	s = e.waitSet(t, set.Name, "Stalled ReleaseStale", func(p *v1alpha1.PackageSet) bool {
		c := setCondition(p, v1alpha1.ConditionStalled)
		return c.Status == metav1.ConditionTrue && c.Reason == packageset.ReasonReleaseStale
	})
	if m := setCondition(s, v1alpha1.ConditionStalled).Message; !strings.Contains(m, "beyond its freshness window of 1h0m0s") {
		t.Errorf("Stalled message %q: want the age and the window", m)
	}
	time.Sleep(2 * packageset.Poll)
	for _, j := range e.setPods(t, set.Name) {
		for _, c := range append(j.Spec.InitContainers, j.Spec.Containers...) {
			if strings.HasSuffix(c.Image, ":1.2.0") {
				t.Errorf("a stale release started Job %s (%s)", j.Name, c.Image)
			}
		}
	}
	if st := s.Status.NodeStatus; len(st) != 2 {
		t.Errorf("node status %v", st)
	}
}
