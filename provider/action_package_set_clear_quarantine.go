package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var _ action.ActionWithConfigure = (*packageSetClearQuarantineAction)(nil)

// packageSetClearQuarantineTimeout is the default wait of gantry_package_set_clear_quarantine.
const packageSetClearQuarantineTimeout = 30 * time.Minute

// NewPackageSetClearQuarantineAction returns the gantry_package_set_clear_quarantine action.
func NewPackageSetClearQuarantineAction() action.Action { return &packageSetClearQuarantineAction{} }

type packageSetClearQuarantineAction struct{ actionBase }

type packageSetClearQuarantineModel struct {
	Name     types.String `tfsdk:"name"`
	Versions []string     `tfsdk:"versions"`
	Timeout  types.String `tfsdk:"timeout"`
}

func (a *packageSetClearQuarantineAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_package_set_clear_quarantine"
}

func (a *packageSetClearQuarantineAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lifts quarantines a rollback left on a package set (`rollout.on_health_failure = \"rollback\"`), " +
			"so that the version (or config) that failed is tried again once its cause is fixed — without changing the " +
			"version in the configuration. The keys are those the set's `status.quarantinedVersions` lists " +
			"(`<package>@<version>`, or `<package>@<version>#config-<hash>` for a failed config). The action writes them " +
			"to the annotation `gantry.dev/clear-quarantine`; the reconciler drops them from status and from the nodes' " +
			"records (after a rollback still running on a node has finished) and removes the annotation. The action then " +
			"waits until the set is `complete`, and fails with the reconciler's reason when the version fails again (it is " +
			"rolled back and quarantined again).",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the PackageSet (cluster-scoped)."},
			"versions": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Quarantine keys to lift, as `status.quarantinedVersions` lists them (e.g. `\"dcgm-tool@1.1.0\"`); " +
					"default: every quarantined version of the set. A key the set does not list fails the action, naming the ones it lists.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.RegexMatches(
					quarantineKeyRe, "must be a quarantine key as status.quarantinedVersions lists it: <package>@<version> (e.g. \"dcgm-tool@1.1.0\"), "+
						"or <package>@<version>#config-<hash> for a failed config"))}},
			"timeout": actionTimeoutAttribute(packageSetClearQuarantineTimeout),
		},
	}
}

// quarantineKeyRe is the form of a quarantine key: <package>@<version>[#config-<hash>].
var quarantineKeyRe = regexp.MustCompile(`^[^@#\s]+@[^@#\s]+(#config-[0-9a-z]+)?$`)

// Invoke asks the reconciler to lift the quarantines and waits for the set to complete.
func (a *packageSetClearQuarantineAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m packageSetClearQuarantineModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := m.Name.ValueString()
	var value string
	waited, err := a.annotateAndWait(ctx, resp, name, actionTimeout(m.Timeout, packageSetClearQuarantineTimeout), packageSetRequest{
		annotate: func(ctx context.Context, c *kube.Clients, u *unstructured.Unstructured, diags *diag.Diagnostics) bool {
			listed, _, _ := unstructured.NestedStringSlice(u.Object, "status", "quarantinedVersions")
			keys, why := quarantineKeys(m.Versions, listed)
			switch {
			case why != "":
				diags.AddAttributeError(path.Root("versions"), "Version Not Quarantined", fmt.Sprintf("PackageSet %s: %s.", name, why))
				return false
			case len(keys) == 0:
				diags.AddWarning("Nothing Quarantined", fmt.Sprintf("PackageSet %s has no quarantined versions (status.quarantinedVersions is empty): nothing to lift.", name))
				return false
			}
			value = strings.Join(keys, ",")
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationClearQuarantine, value)
			if _, err := c.Dynamic.Resource(wait.PackageSet.GVR).Patch(ctx, name, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager + "-actions"}); err != nil {
				diags.Append(apiDiagnostic("PackageSet", "Annotating", err))
				return false
			}
			progress(resp, fmt.Sprintf("PackageSet %s: lifting the quarantine of %s (annotation %s)", name, value, v1alpha1.AnnotationClearQuarantine))
			return true
		},
		check: func(_ context.Context, u *unstructured.Unstructured) (bool, string, error) {
			if left, asked := u.GetAnnotations()[v1alpha1.AnnotationClearQuarantine]; asked {
				if left != value { // the reconciler kept what a running rollback still holds
					return false, "waiting for the rollback still running to finish before lifting " + left, nil
				}
				return false, "waiting for the reconciler to lift " + left, nil
			}
			return setComplete(u)
		},
	})
	if !waited {
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("PackageSet Clear Quarantine Failed", fmt.Sprintf("PackageSet %s did not complete after lifting the quarantine of %s: %s.", name, value, err))
		return
	}
	progress(resp, fmt.Sprintf("PackageSet %s: quarantine of %s lifted; complete", name, value))
}

// quarantineKeys is the keys to lift: asked (every listed key when asked is empty), sorted;
// why says which asked keys the set does not list ("" when all are listed).
func quarantineKeys(asked, listed []string) (keys []string, why string) {
	if len(asked) == 0 {
		keys = slices.Clone(listed)
		slices.Sort(keys)
		return keys, ""
	}
	var missing []string
	for _, k := range asked {
		if !slices.Contains(listed, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("%s not quarantined; status.quarantinedVersions lists [%s]", strings.Join(missing, ", "), strings.Join(listed, ", "))
	}
	keys = slices.Clone(asked)
	slices.Sort(keys)
	return keys, ""
}
