package provider

// gantry_package_set rollout.release: a signed release of the set's packages (NixFleet's release
// signing and freshnessWindow), verified at plan when the values are known and by the
// reconciler before any stage starts.

import (
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// signedAtRe is a release's signed_at: UTC to the second (the CRD's pattern).
var signedAtRe = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`)

type releaseModel struct {
	PublicKey       types.String `tfsdk:"public_key"`
	Signature       types.String `tfsdk:"signature"`
	SignedAt        types.String `tfsdk:"signed_at"`
	FreshnessWindow types.String `tfsdk:"freshness_window"`
}

func releaseAttribute() schema.Attribute {
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "Make the packages a signed release, as NixFleet's signed releases.\n\nNo stage starts on any node until `signature` verifies against `public_key` " +
			"(locally, with sigstore's signature library, no network), and with `freshness_window` no new node starts once the release is older than the window. " +
			"The signature is over the release payload, exactly these bytes: the line `gantry.dev/release/v1`, the line `signedAt <signed_at>`, then one line " +
			"`package <name> <version> <image>` per package sorted by name, where image is the image the stages run (the version as its tag, a digest as written); " +
			"every line ends in a newline (`\\n`). Env, config and the other package fields are not signed. Sign it with `cosign sign-blob --key cosign.key payload` " +
			"(ECDSA P-256) or an ed25519 key (see \"Signing a release\" in the guide \"Moving from Skyhook, NixFleet, KAITO or the Hourglass operator\"). Checked at plan when the values are known; a signature that does not verify " +
			"(or packages changed without a new signature) holds every node and the set is Stalled with reason `ReleaseNotVerified`, which fails the apply.",
		Attributes: map[string]schema.Attribute{
			"public_key": schema.StringAttribute{Required: true, MarkdownDescription: "PEM public key (`-----BEGIN PUBLIC KEY-----`): ECDSA P-256 (cosign's `cosign.pub`) or ed25519.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 4096), checkString{desc: "a supported PEM public key", title: "Invalid Public Key", check: func(v string) error {
					_, err := packageset.VerifierFor(v)
					return err
				}}}},
			"signature": schema.StringAttribute{Required: true, MarkdownDescription: "Base64 signature of the release payload, as `cosign sign-blob --key` prints it.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 1024)}},
			"signed_at": schema.StringAttribute{Required: true, MarkdownDescription: "When the release was signed, UTC to the second, e.g. `2026-11-26T15:00:00Z`. Part of the payload; `freshness_window` counts from it.",
				Validators: []validator.String{stringvalidator.RegexMatches(signedAtRe, "must be a UTC time to the second such as 2026-11-26T15:00:00Z")}},
			"freshness_window": schema.StringAttribute{Optional: true,
				MarkdownDescription: "How long after `signed_at` the release may start nodes (NixFleet's `freshnessWindow`), e.g. `72h`.\n\nPast it, no new node starts: nodes already " +
					"converged stay and nodes already activating finish (NixFleet's agents refuse to activate a stale release), and while a node still needs the release the set is " +
					"Stalled with reason `ReleaseStale` naming the age and the window; sign again with a new `signed_at`. Unset: no limit.",
				Validators: []validator.String{durationValidator{min: time.Second}}},
		}}
}

func expandRelease(r *releaseModel) (*v1alpha1.Release, error) {
	if r == nil {
		return nil, nil
	}
	out := &v1alpha1.Release{PublicKey: r.PublicKey.ValueString(), Signature: r.Signature.ValueString(), SignedAt: r.SignedAt.ValueString()}
	var err error
	if out.FreshnessWindow, err = metaDuration(r.FreshnessWindow, "rollout.release.freshness_window"); err != nil {
		return nil, err
	}
	return out, nil
}

func flattenRelease(r *v1alpha1.Release, prior *releaseModel) *releaseModel {
	if r == nil {
		return nil
	}
	var pr releaseModel
	if prior != nil {
		pr = *prior
	}
	m := &releaseModel{PublicKey: types.StringValue(r.PublicKey), Signature: types.StringValue(r.Signature), SignedAt: types.StringValue(r.SignedAt),
		FreshnessWindow: types.StringNull()}
	if r.FreshnessWindow != nil {
		m.FreshnessWindow = durationString(r.FreshnessWindow.Duration, pr.FreshnessWindow)
	}
	return m
}

// validateReleaseConfig verifies rollout.release's signature at plan once the key, the
// signature, signed_at and every package's name, version and image are known: an error on
// rollout.release.signature in the verifier's words (what the reconciler would report as
// ReleaseNotVerified), or on signed_at when it lies beyond packageset.ReleaseClockSkew in the
// future. Freshness is the reconciler's (it depends on when the nodes start).
func validateReleaseConfig(root configValue, diags *diag.Diagnostics) {
	rel := root.Attr("rollout").Attr("release")
	key, kok := rel.Attr("public_key").String()
	sig, sok := rel.Attr("signature").String()
	at, aok := rel.Attr("signed_at").String()
	if !kok || !sok || !aok || !signedAtRe.MatchString(at) {
		return
	}
	if _, err := packageset.VerifierFor(key); err != nil {
		return // the public_key validator reports it
	}
	list, known := root.Attr("packages").List()
	if !known {
		return
	}
	pkgs := make([]v1alpha1.Package, 0, len(list))
	for _, p := range list {
		name, nok := p.Attr("name").String()
		version, vok := p.Attr("version").String()
		image, iok := p.Attr("image").String()
		if !nok || !vok || !iok {
			return
		}
		pkgs = append(pkgs, v1alpha1.Package{Name: name, Version: version, Image: image})
	}
	if err := packageset.VerifyRelease(&v1alpha1.Release{PublicKey: key, Signature: sig, SignedAt: at}, pkgs); err != nil {
		diags.AddAttributeError(rel.Attr("signature").Path(), "Release Not Verified",
			fmt.Sprintf("%s: %s. No node would start this release; sign the payload of these packages again (see rollout.release).", rel.Attr("signature").Path(), err))
	} else if err := packageset.SignedInFuture(at, time.Now()); err != nil {
		diags.AddAttributeError(rel.Attr("signed_at").Path(), "Release Signed in the Future",
			fmt.Sprintf("%s: %s. No node would start this release.", rel.Attr("signed_at").Path(), err))
	}
}
