package provider

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
)

// The executor's remote signer in Hourglass compatibility mode (issue 40 item 8):
// operator_keys.remote_signer becomes spec.operatorKeys.remoteSigner, which the reconciler
// renders as Hourglass's remoteSignerConfig (internal/executor/hourglass.go) so an unmodified
// Hourglass image signs with web3signer. Only public values are in Terraform: the URL, the
// key's public key and address, and the names of the Secrets holding the TLS material.

type remoteSignerModel struct {
	URL                  types.String `tfsdk:"url"`
	PublicKey            types.String `tfsdk:"public_key"`
	Address              types.String `tfsdk:"address"`
	CASecretName         types.String `tfsdk:"ca_secret_name"`
	ClientCertSecretName types.String `tfsdk:"client_cert_secret_name"`
}

// ecdsaPublicKey is the CRD's pattern of remoteSigner.publicKey: web3signer's eth1 public key,
// 0x and 128 hex digits (64 bytes, uncompressed), optionally after the 04 prefix.
var ecdsaPublicKey = regexp.MustCompile(`^0x(04)?[0-9a-fA-F]{128}$`)

// remoteSignerAttribute is operator_keys.remote_signer of the kind named owner ("executor",
// "aggregator"), described by lead (its lead sentence and details).
func remoteSignerAttribute(owner, lead string) schema.SingleNestedAttribute {
	secret := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc,
			Validators: []validator.String{stringvalidator.LengthAtMost(253), stringvalidator.RegexMatches(dns1123Name, "must be a Secret name (DNS-1123 subdomain)")}}
	}
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: lead,
		Attributes:          remoteSignerAttributes(owner, secret),
	}
}

// executorRemoteSignerLead is gantry_executor's description of operator_keys.remote_signer.
const executorRemoteSignerLead = "A remote signer (web3signer) for the operator's ECDSA key in Hourglass compatibility mode (`hourglass_compat`).\n\n" +
	"Rendered as Hourglass's own `remoteSignerConfig` (`url`, `publicKey`, `fromAddress`, `caCert`, `cert`, `key`) of " +
	"`operator.operatorPrivateKey`, which signs the operator's transactions, and, without a BLS keystore, of `operator.signingKeys.ecdsa`, " +
	"which signs task results, with the remote-signer flag set: an unmodified Hourglass executor image then signs through web3signer " +
	"and holds no ECDSA key. Stands for `ecdsa_key` (and for `secret_name`, unless that holds a BLS keystore: `bls_keystore_key`). " +
	"Only public values are in Terraform; the TLS certificates and the client key come from Secrets as `valueFrom.secretKeyRef` into " +
	"the config's empty placeholders (`" + executor.HourglassRemoteCAEnv + "` and its siblings), never into the ConfigMap or the state."

// remoteSignerAttributes are remote_signer's attributes; secret builds a Secret name attribute.
func remoteSignerAttributes(owner string, secret func(string) schema.StringAttribute) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"url": schema.StringAttribute{Required: true, MarkdownDescription: "URL of the web3signer, `https://` (TLS) or `http://`, e.g. `https://web3signer.signers.svc:9000`.",
			Validators: []validator.String{stringvalidator.LengthAtMost(2048), stringvalidator.RegexMatches(httpURL, "must be an http:// or https:// URL")}},
		"public_key": schema.StringAttribute{Required: true, MarkdownDescription: "The operator's ECDSA public key as web3signer lists it " +
			"(`/api/v1/eth1/publicKeys`): `0x` and 128 hex digits, or 130 with the `04` prefix (Hourglass's `publicKey`).",
			Validators: []validator.String{stringvalidator.RegexMatches(ecdsaPublicKey, "must be an ECDSA public key: 0x followed by 128 hexadecimal digits (or 04 and 128)")}},
		"address": schema.StringAttribute{Optional: true, MarkdownDescription: "The key's address, `0x` and 40 hex digits (Hourglass's `fromAddress`: " +
			"the sender of the operator's transactions). Default `operator_address`.",
			Validators: []validator.String{stringvalidator.RegexMatches(ethAddress, "must be an Ethereum address: 0x followed by 40 hexadecimal digits")}},
		"ca_secret_name": secret("Secret in the " + owner + "'s namespace whose key `" + executor.RemoteSignerCAKey + "` is the PEM CA certificate " +
			"web3signer's server certificate is checked against (Hourglass's `caCert`). Needs an `https://` `url`."),
		"client_cert_secret_name": secret("`kubernetes.io/tls` Secret in the " + owner + "'s namespace (keys `tls.crt`, `tls.key`) with the client " +
			"certificate and key for mutual TLS (Hourglass's `cert` and `key`). Needs an `https://` `url`."),
	}
}

func expandRemoteSigner(m *remoteSignerModel) *v1alpha1.RemoteSigner {
	if m == nil {
		return nil
	}
	return &v1alpha1.RemoteSigner{URL: m.URL.ValueString(), PublicKey: m.PublicKey.ValueString(), FromAddress: m.Address.ValueString(),
		CASecretName: m.CASecretName.ValueString(), ClientCertSecretName: m.ClientCertSecretName.ValueString()}
}

func flattenRemoteSigner(rs *v1alpha1.RemoteSigner, prior *remoteSignerModel) *remoteSignerModel {
	if rs == nil {
		return nil
	}
	if prior == nil {
		prior = &remoteSignerModel{}
	}
	return &remoteSignerModel{URL: types.StringValue(rs.URL), PublicKey: types.StringValue(rs.PublicKey), Address: optString(rs.FromAddress, prior.Address),
		CASecretName: optString(rs.CASecretName, prior.CASecretName), ClientCertSecretName: optString(rs.ClientCertSecretName, prior.ClientCertSecretName)}
}

// validateRemoteSigner checks operator_keys.remote_signer where the values are known, each
// error on the attribute at fault and naming the other: it needs hourglass_compat (it is
// Hourglass's remoteSignerConfig; without it remote_signer_url is the signer), it stands for
// ecdsa_key and ecdsa_private_key_wo and cannot go with remote_signer_url, and its TLS Secrets
// need an https:// url (Hourglass uses TLS only for https).
func validateRemoteSigner(root configValue, resp *resource.ValidateConfigResponse) {
	keys := root.Attr("operator_keys")
	rs := keys.Attr("remote_signer")
	if rs.Null() || rs.Unknown() {
		return
	}
	if c := root.Attr("hourglass_compat"); c.Null() {
		resp.Diagnostics.AddAttributeError(rs.Path(), "Remote Signer Needs Hourglass Compatibility Mode",
			"operator_keys.remote_signer is Hourglass's remoteSignerConfig and needs hourglass_compat; without hourglass_compat set "+
				"operator_keys.remote_signer_url instead.")
	}
	checkRemoteSigner(keys, []string{"ecdsa_key", "ecdsa_private_key_wo", "remote_signer_url"}, &resp.Diagnostics)
}

// checkRemoteSigner checks a set operator_keys.remote_signer of keys: none of conflicting
// (the attributes of keys that also give the ECDSA key) beside it, and its TLS Secrets only
// with an https:// url (Hourglass uses TLS only for https), each error on the attribute at fault.
func checkRemoteSigner(keys configValue, conflicting []string, diags *diag.Diagnostics) {
	rs := keys.Attr("remote_signer")
	if rs.Null() || rs.Unknown() {
		return
	}
	for _, name := range conflicting {
		if v := keys.Attr(name); v.Set() {
			diags.AddAttributeError(v.Path(), "Conflicting Attributes: operator_keys."+name+" and operator_keys.remote_signer",
				fmt.Sprintf("operator_keys.%s conflicts with operator_keys.remote_signer: the remote signer holds the operator's ECDSA key. Remove one of them.", name))
		}
	}
	url, ok := rs.Attr("url").String()
	if !ok || strings.HasPrefix(url, "https://") {
		return
	}
	for _, name := range []string{"ca_secret_name", "client_cert_secret_name"} {
		if v := rs.Attr(name); v.Set() {
			diags.AddAttributeError(v.Path(), "TLS Needs an https:// URL",
				fmt.Sprintf("operator_keys.remote_signer.%s configures TLS, but url = %q is not https://: Hourglass uses TLS only for https URLs. "+
					"Use an https:// url or remove %s.", name, url, name))
		}
	}
}
