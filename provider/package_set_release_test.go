package provider

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	k8srand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// testReleaseSigner is the shared releaseSigner with the HCL of a signed rollout.release.
type testReleaseSigner struct{ releaseSigner }

func newTestReleaseSigner(t *testing.T) testReleaseSigner {
	t.Helper()
	s, err := newReleaseSigner()
	if err != nil {
		t.Fatal(err)
	}
	return testReleaseSigner{s}
}

// releaseBlock is the HCL of rollout.release signed for the dcgm-tool package at signedVersion
// at signedAt, with an optional freshness_window.
func (s testReleaseSigner) releaseBlock(t *testing.T, signedVersion string, signedAt time.Time, window string) string {
	t.Helper()
	at := signedAt.UTC().Format(packageset.SignedAtLayout)
	sig, err := s.signRelease([]v1alpha1.Package{{Name: "dcgm-tool", Version: signedVersion, Image: "ghcr.io/gantry-dev/dcgm-tool"}}, at)
	if err != nil {
		t.Fatal(err)
	}
	w := ""
	if window != "" {
		w = fmt.Sprintf(", freshness_window = %q", window)
	}
	return fmt.Sprintf(`release = { public_key = %q, signature = %q, signed_at = %q %s }`, s.pub, sig, at, w)
}

func releaseSetConfig(name, pool, version, release string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %q
  node_selector = { "gantry.dev/test-pool" = %q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout  = { %s }
  packages = [{ name = "dcgm-tool", version = %q, image = "ghcr.io/gantry-dev/dcgm-tool" }]
  timeouts = { create = "3m", update = "3m", delete = "3m" }
}
`, name, pool, release, version)
}

// A signed release applies to complete; a signature over other packages fails at plan naming
// rollout.release.signature in the verifier's words, and so does one signed in the future
// naming rollout.release.signed_at; a verified but stale release (beyond
// freshness_window) fails the apply with the reconciler's ReleaseStale and starts no node.
func TestAccPackageSet_release(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-rel-" + k8srand.String(5)
	accNodes(t, c, pool, 3)
	addr := "gantry_package_set.test"
	s := newTestReleaseSigner(t)
	now := time.Now()
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: releaseSetConfig(pool, pool, "1.0.0", s.releaseBlock(t, "1.0.0", now, "24h")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("complete_nodes"), knownvalue.StringExact("3/3")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("release").AtMapKey("freshness_window"), knownvalue.StringExact("24h")),
				},
			},
			{
				// Packages changed without a new signature.
				Config:      releaseSetConfig(pool, pool, "1.1.0", s.releaseBlock(t, "1.0.0", now, "24h")),
				ExpectError: regexp.MustCompile(`(?s)Release Not Verified.*rollout\.release\.signature.*invalid\s+signature`),
			},
			{
				// Signed (validly) two hours from now: refused at plan, naming signed_at.
				Config:      releaseSetConfig(pool, pool, "1.1.0", s.releaseBlock(t, "1.1.0", now.Add(2*time.Hour), "24h")),
				ExpectError: regexp.MustCompile(`(?s)Release Signed in the Future.*rollout\.release\.signed_at.*in\s+the\s+future`),
			},
			{
				Config:      releaseSetConfig(pool, pool, "1.1.0", s.releaseBlock(t, "1.1.0", now.Add(-2*time.Hour), "1h")),
				ExpectError: regexp.MustCompile(`(?s)PackageSet Failed.*ReleaseStale.*beyond\s+its\s+freshness\s+window\s+of\s+1h0m0s`),
			},
		},
	})
}
