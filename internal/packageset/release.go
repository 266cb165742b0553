package packageset

// Rule: a signed release (spec.rollout.release) must verify before any node starts it, and a
// release older than its freshness window starts no new node (NixFleet's release signing and
// freshnessWindow).

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Reasons of a refused release (Ready and Stalled).
const (
	// ReasonReleaseNotVerified: the release's signature does not verify against its public key
	// (or the key or signature cannot be read): no stage starts on any node.
	ReasonReleaseNotVerified = "ReleaseNotVerified"
	// ReasonReleaseStale: the release is older than its freshness window: no new node starts.
	ReasonReleaseStale = "ReleaseStale"
)

// ReleaseFormat is the first line of a release payload (its format's version).
const ReleaseFormat = "gantry.dev/release/v1"

// SignedAtLayout is the layout of a release's signedAt: RFC 3339 in UTC to the second.
const SignedAtLayout = "2006-01-02T15:04:05Z"

// ReleasePayload is the canonical bytes a release's signature is over:
//
//	gantry.dev/release/v1\n
//	signedAt <signedAt>\n
//	package <name> <version> <image>\n      (one line per package, sorted by name)
//
// where image is the image the stages run (ImageOf: the version as its tag, a digest as
// written). Env, config and the other package fields are not part of it. The same packages and
// signedAt always give the same bytes, whatever their order in the spec.
func ReleasePayload(pkgs []v1alpha1.Package, signedAt string) []byte {
	lines := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		lines = append(lines, fmt.Sprintf("package %s %s %s\n", p.Name, p.Version, ImageOf(p)))
	}
	sort.Strings(lines) // names are unique and have no space: sorts by name
	var b bytes.Buffer
	b.WriteString(ReleaseFormat + "\n")
	b.WriteString("signedAt " + signedAt + "\n")
	for _, l := range lines {
		b.WriteString(l)
	}
	return b.Bytes()
}

// ReleaseRefusal says why a release may not start nodes: Reason is ReasonReleaseNotVerified or
// ReasonReleaseStale, Message names what failed (the verifier's words, or the age and window).
type ReleaseRefusal struct {
	Reason, Message string
}

// Stale: the refusal is for freshness only (the signature verified): nodes already activating
// go on, converged nodes stay, no new node starts.
func (r *ReleaseRefusal) Stale() bool { return r != nil && r.Reason == ReasonReleaseStale }

// VerifierFor reads a PEM public key (PKIX "PUBLIC KEY") and returns a sigstore verifier for
// it: ECDSA P-256 with SHA-256, or ed25519. Errors name what is wrong with the key.
func VerifierFor(publicKeyPEM string) (signature.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(publicKeyPEM))
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("public key: ECDSA curve %s is not supported, use P-256 (as cosign generate-key-pair makes)", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("public key: %T is not supported, use ECDSA P-256 or ed25519", pub)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return v, nil
}

// VerifyRelease checks a release's signature over ReleasePayload(pkgs, r.SignedAt) against
// its public key. Errors are what failed, in the verifier's words where it has them.
func VerifyRelease(r *v1alpha1.Release, pkgs []v1alpha1.Package) error {
	if _, err := time.Parse(SignedAtLayout, r.SignedAt); err != nil {
		return fmt.Errorf("signedAt %q is not a UTC time such as 2026-11-26T15:00:00Z", r.SignedAt)
	}
	v, err := VerifierFor(r.PublicKey)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.Signature))
	if err != nil {
		return fmt.Errorf("signature is not base64: %w", err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(ReleasePayload(pkgs, r.SignedAt))); err != nil {
		return fmt.Errorf("signature does not verify against the public key over the release of %s signed at %s (the packages or signedAt changed since it was signed, or another key signed it): %w",
			releaseNames(pkgs), r.SignedAt, err)
	}
	return nil
}

// releaseNames is "<name>@<version>, ..." of the packages, sorted.
func releaseNames(pkgs []v1alpha1.Package) string {
	names := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		names = append(names, p.Name+"@"+p.Version)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// ReleaseClockSkew is how far in the future a release's signedAt may lie (the signer's clock
// ahead of the cluster's) before it is refused.
const ReleaseClockSkew = 5 * time.Minute

// SignedInFuture returns an error when signedAt (SignedAtLayout; an unparsable value is
// VerifyRelease's to report: nil here) lies more than ReleaseClockSkew after now: a release
// cannot have been signed after it is applied, and its freshness window would count from a
// time not yet come (NixFleet's freshness check refuses it too).
func SignedInFuture(signedAt string, now time.Time) error {
	if at, err := time.Parse(SignedAtLayout, signedAt); err == nil && at.After(now.Add(ReleaseClockSkew)) {
		return fmt.Errorf("signedAt %s is %s in the future (now %s; %s of clock skew allowed): check the signing machine's clock and sign again",
			signedAt, at.Sub(now).Truncate(time.Second), now.UTC().Format(SignedAtLayout), ReleaseClockSkew)
	}
	return nil
}

// ReleaseAge is how old a release signed at signedAt is at now, and whether that is beyond
// window (window 0: no limit). A release signed after now has age 0.
func ReleaseAge(signedAt time.Time, window time.Duration, now time.Time) (age time.Duration, stale bool) {
	age = now.Sub(signedAt)
	if age < 0 {
		age = 0
	}
	return age, window > 0 && age > window
}

// CheckRelease decides whether the spec's release may start nodes at now: nil without a
// release, or when it verifies and is fresh; else the refusal (ReleaseNotVerified first, also
// for a signedAt beyond ReleaseClockSkew in the future:
// a release that does not verify is not trusted to say when it was signed).
func CheckRelease(spec *v1alpha1.PackageSetSpec, now time.Time) *ReleaseRefusal {
	if spec.Rollout == nil || spec.Rollout.Release == nil {
		return nil
	}
	r := spec.Rollout.Release
	if err := VerifyRelease(r, spec.Packages); err != nil {
		return &ReleaseRefusal{Reason: ReasonReleaseNotVerified, Message: "release not verified: " + err.Error()}
	}
	if err := SignedInFuture(r.SignedAt, now); err != nil {
		return &ReleaseRefusal{Reason: ReasonReleaseNotVerified, Message: "release not verified: " + err.Error()}
	}
	if r.FreshnessWindow == nil {
		return nil
	}
	at, _ := time.Parse(SignedAtLayout, r.SignedAt) // VerifyRelease parsed it
	if age, stale := ReleaseAge(at, r.FreshnessWindow.Duration, now); stale {
		return &ReleaseRefusal{Reason: ReasonReleaseStale, Message: fmt.Sprintf(
			"release signed at %s is %s old, beyond its freshness window of %s: no new node starts (nodes already converged stay); sign the release again with a new signedAt",
			r.SignedAt, age.Truncate(time.Second), r.FreshnessWindow.Duration)}
	}
	return nil
}

// holdForRelease holds node pass p when the set's release is not verified: no stage starts
// (stages already running finish) and the node reports waiting. A stale release holds nothing
// here: it only halts new starts (Plan).
func holdForRelease(f SetFacts, p *nodePass, specErr error) {
	if f.Release != nil && !f.Release.Stale() && !f.Deleting && specErr == nil && p.hold == "" {
		p.hold = v1alpha1.StatusWaiting
	}
}

// releaseRefused is the refusal the set reports (Decision.Release): a release not verified
// always, a stale one while a selected node is not complete (a start it refuses); nil when the
// set is deleting, paused, disabled or its spec is invalid (they report themselves).
func releaseRefused(f SetFacts, specErr error, statuses []Status) *ReleaseRefusal {
	if f.Release == nil || f.Deleting || f.Paused || f.Disabled || specErr != nil {
		return nil
	}
	if f.Release.Stale() && statusCount(statuses, v1alpha1.StatusComplete) == len(statuses) {
		return nil
	}
	return f.Release
}
