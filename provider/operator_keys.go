package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// Write-only operator keys of gantry_executor (Terraform >= 1.11): operator_keys.*_private_key_wo
// with private_keys_wo_version are sent only during apply, never kept in plan, state or logs.
// The provider writes them into a Secret it owns (<executor name>-operator-keys, owned by the
// Executor so it goes with it) and points spec.operatorKeys at it. The Secret is rewritten when
// missing, when the version changes (the reconciler then rolls the pods) or when the set of keys
// changes; Terraform keeps no trace of a value, so changing a key's value alone needs a new version.

// Secret keys of the provider-owned operator keys Secret.
const (
	woECDSAKey = "ecdsa-private-key"
	woBLSKey   = "bls-private-key"
)

// operatorKeysSecretName is the name of the Secret holding an executor's write-only keys.
func operatorKeysSecretName(executor string) string { return executor + "-operator-keys" }

// executorWOKeys are gantry_executor's write-only key attributes of operator_keys, each with
// the key of the provider-owned Secret it is written to.
var executorWOKeys = map[string]string{"ecdsa_private_key_wo": woECDSAKey, "bls_private_key_wo": woBLSKey}

// woKeys returns the write-only keys given in the configuration, Secret key → value (empty
// when write-only keys are not used), reading the operator_keys attributes of attrs
// (attribute → Secret key). Unknown values are an error: Terraform gives write-only values
// only at apply, where they are known.
func woKeys(ctx context.Context, config tfsdk.Config, attrs map[string]string) (map[string]string, diag.Diagnostics) {
	var diags diag.Diagnostics
	out := map[string]string{}
	for attr, key := range attrs {
		var v types.String
		p := path.Root("operator_keys").AtName(attr)
		diags.Append(config.GetAttribute(ctx, p, &v)...)
		if v.IsUnknown() {
			diags.AddAttributeError(p, "Unknown Write-Only Value", "operator_keys."+attr+" is not known at apply time.")
		}
		if !v.IsNull() && !v.IsUnknown() {
			out[key] = v.ValueString()
		}
	}
	return out, diags
}

// prepareOperatorKeys is gantry_executor's kindOps.prepare: with private_keys_wo_version set,
// it writes the write-only keys into the provider-owned Secret (writeWOKeys) and records which
// are given (expand references only those). Without it, a Secret this provider wrote for the
// executor earlier is left to applied, which deletes it once the Executor no longer references it.
func prepareOperatorKeys(ctx context.Context, data *providerData, config tfsdk.Config, plan, _ *executorModelV0) diag.Diagnostics {
	k := plan.OperatorKeys
	if k == nil || k.KeysWOVersion.IsNull() {
		return nil
	}
	given, diags := writeWOKeys(ctx, data, config, plan.Namespace.ValueString(), operatorKeysSecretName(plan.Name.ValueString()), k.KeysWOVersion, executorWOKeys)
	k.woGiven = given
	return diags
}

// writeWOKeys reads the write-only keys attrs names from the configuration and writes the
// provider-owned Secret ns/name when it is missing, its version differs from version or its
// set of keys differs (server-side apply, field manager terraform-provider-gantry); it returns
// the Secret keys given, sorted. Diagnostics name the Secret and the API server's message,
// never a key.
func writeWOKeys(ctx context.Context, data *providerData, config tfsdk.Config, ns, name string, versionAttr types.Int64, attrs map[string]string) ([]string, diag.Diagnostics) {
	c, _, err := data.get()
	if err != nil {
		return nil, diag.Diagnostics{clientDiagnostic(err)}
	}
	keys, diags := woKeys(ctx, config, attrs)
	if diags.HasError() {
		return nil, diags
	}
	given := slices.Sorted(maps.Keys(keys))
	version := strconv.FormatInt(versionAttr.ValueInt64(), 10)
	secrets := c.Core.CoreV1().Secrets(ns)
	cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		diags.Append(apiDiagnostic("Secret", "Reading", err))
		return given, diags
	case cur.Annotations[v1alpha1.AnnotationOperatorKeysVersion] == version && slices.Equal(slices.Sorted(maps.Keys(cur.Data)), given):
		tflog.Debug(ctx, "operator keys Secret is current", map[string]interface{}{"secret": ns + "/" + name, "version": version})
		return given, diags
	}
	ac := corev1ac.Secret(name, ns).WithType(corev1.SecretTypeOpaque).WithStringData(keys).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "terraform", "app.kubernetes.io/part-of": "gantry"}).
		WithAnnotations(map[string]string{managedByAnnotation: managedByValue, v1alpha1.AnnotationOperatorKeysVersion: version})
	if err := retryWrite(ctx, "server-side apply of Secret "+ns+"/"+name, func(ctx context.Context) error {
		_, err := secrets.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		return err
	}); err != nil {
		diags.Append(apiDiagnostic("Secret", "Writing", err))
		return given, diags
	}
	tflog.Info(ctx, "wrote the operator keys Secret", map[string]interface{}{"secret": ns + "/" + name, "version": version, "keys": given})
	return given, diags
}

// ownOperatorKeys is gantry_executor's kindOps.applied (ownWOKeys for the Executor's Secret).
func ownOperatorKeys(ctx context.Context, c *kube.Clients, plan *executorModelV0, live *unstructured.Unstructured) diag.Diagnostics {
	used := plan.OperatorKeys != nil && !plan.OperatorKeys.KeysWOVersion.IsNull()
	return ownWOKeys(ctx, c, plan.Namespace.ValueString(), operatorKeysSecretName(plan.Name.ValueString()), used, live)
}

// ownWOKeys: the Secret ns/name that writeWOKeys wrote gets the object live as its controller
// owner, so deleting the object deletes it; when the configuration no longer uses write-only
// keys (used false: it moved to secret_name or a remote signer), a Secret of that name this
// provider wrote and live controls is deleted.
func ownWOKeys(ctx context.Context, c *kube.Clients, ns, name string, used bool, live *unstructured.Unstructured) diag.Diagnostics {
	var diags diag.Diagnostics
	secrets := c.Core.CoreV1().Secrets(ns)
	if !used {
		cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err == nil && cur.Annotations[managedByAnnotation] == managedByValue && metav1.IsControlledBy(cur, live) {
			if err := secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
				diags.Append(apiDiagnostic("Secret", "Deleting", err))
			}
		}
		return diags
	}
	owner := metav1ac.OwnerReference().WithAPIVersion(live.GetAPIVersion()).WithKind(live.GetKind()).
		WithName(live.GetName()).WithUID(live.GetUID()).WithController(true).WithBlockOwnerDeletion(false)
	ac := corev1ac.Secret(name, ns).WithOwnerReferences(owner)
	if err := retryWrite(ctx, "owner reference of Secret "+ns+"/"+name, func(ctx context.Context) error {
		_, err := secrets.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: fieldManager + "-owner", Force: true})
		return err
	}); err != nil {
		diags.AddError("Error Writing Secret", fmt.Sprintf("Could not make %s %s/%s the owner of its operator keys Secret %s: %s",
			live.GetKind(), ns, live.GetName(), name, err))
	}
	return diags
}
