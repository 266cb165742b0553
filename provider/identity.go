package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Resource identity (Terraform >= 1.12): every Gantry resource is identified by the object's
// namespace and name, exactly what `kubectl get -n <namespace> <kind> <name>` needs. The
// namespaced kinds (Performer, Executor, Workspace) have the identity {namespace, name};
// PackageSet, which is cluster-scoped, has {name}. An `import` block may give `identity = {...}`
// instead of `id`; Terraform stores the identity in state and `terraform query` returns it
// for each object a list block finds. Older CLIs ignore identity (import by `id` works on all).

// identitySchema returns the identity schema of a namespaced kind (namespace optional for
// import, "default" when omitted) or, when namespaced is false, of a cluster-scoped kind.
func identitySchema(kind string, namespaced bool) identityschema.Schema {
	attrs := map[string]identityschema.Attribute{
		"name": identityschema.StringAttribute{
			RequiredForImport: true,
			Description:       fmt.Sprintf("Name of the %s (metadata.name).", kind),
		},
	}
	if namespaced {
		attrs["namespace"] = identityschema.StringAttribute{
			OptionalForImport: true,
			Description:       fmt.Sprintf("Namespace of the %s (metadata.namespace); `default` when omitted on import.", kind),
		}
	}
	return identityschema.Schema{Attributes: attrs}
}

// setIdentity writes the identity of the object namespace/name (namespace "" for a
// cluster-scoped kind) into id. A nil id (the CLI or resource has no identity support) is
// left alone.
func setIdentity(ctx context.Context, id *tfsdk.ResourceIdentity, namespace, name string) diag.Diagnostics {
	if id == nil {
		return nil
	}
	var diags diag.Diagnostics
	diags.Append(id.SetAttribute(ctx, path.Root("name"), name)...)
	if namespace != "" {
		diags.Append(id.SetAttribute(ctx, path.Root("namespace"), namespace)...)
	}
	return diags
}

// importKey returns the namespace and name an import asks for: from the import ID
// ("<namespace>/<name>", or "<name>" when namespaced is false) or, when the ID is empty, from
// the `identity` attribute of the import block (namespace "default" when omitted). Errors
// name the malformed ID or identity attribute.
func importKey(ctx context.Context, kind string, namespaced bool, req resource.ImportStateRequest) (namespace, name string, diags diag.Diagnostics) {
	if req.ID != "" || req.Identity == nil || req.Identity.Raw.IsNull() {
		if !namespaced {
			if errs := validation.IsDNS1123Label(req.ID); len(errs) > 0 {
				diags.AddError("Invalid Import ID", fmt.Sprintf("import ID %q must be the %s's name: %v", req.ID, kind, errs))
			}
			return "", req.ID, diags
		}
		ns, n, err := parseImportID(kind, req.ID)
		if err != nil {
			diags.Append(importIDDiagnostic(err))
		}
		return ns, n, diags
	}
	var nameV, nsV types.String
	diags.Append(req.Identity.GetAttribute(ctx, path.Root("name"), &nameV)...)
	if namespaced {
		diags.Append(req.Identity.GetAttribute(ctx, path.Root("namespace"), &nsV)...)
	}
	if diags.HasError() {
		return "", "", diags
	}
	name, namespace = nameV.ValueString(), nsV.ValueString()
	if namespaced && namespace == "" {
		namespace = "default"
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		diags.AddAttributeError(path.Root("name"), "Invalid Import Identity", fmt.Sprintf("identity.name %q is not a valid %s name: %v", name, kind, errs))
	}
	if namespaced {
		if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
			diags.AddAttributeError(path.Root("namespace"), "Invalid Import Identity", fmt.Sprintf("identity.namespace %q is not a valid namespace: %v", namespace, errs))
		}
	}
	return namespace, name, diags
}

// importObject is the ImportState of every Gantry resource: the key from the import ID or
// identity (importKey) sets id, name and (namespaced kinds) namespace in state and the
// identity; Read fills in the rest from the cluster.
func importObject(ctx context.Context, kind string, namespaced bool, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ns, name, diags := importKey(ctx, kind, namespaced, req)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), objectID(ns, name))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	if namespaced {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	}
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, ns, name)...)
}

// parseImportID splits "namespace/name" and checks both parts are valid Kubernetes names.
func parseImportID(kind, id string) (namespace, name string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("import ID %q is not of the form <namespace>/<name>, e.g. default/my-%s", id, strings.ToLower(kind))
	}
	if errs := validation.IsDNS1123Label(parts[0]); len(errs) > 0 {
		return "", "", fmt.Errorf("import ID %q: namespace %q is not valid: %s", id, parts[0], strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(parts[1]); len(errs) > 0 {
		return "", "", fmt.Errorf("import ID %q: name %q is not valid: %s", id, parts[1], strings.Join(errs, "; "))
	}
	return parts[0], parts[1], nil
}
