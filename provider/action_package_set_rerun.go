package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var _ action.ActionWithConfigure = (*packageSetRerunAction)(nil)

// packageSetRerunTimeout is the default wait of gantry_package_set_rerun.
const packageSetRerunTimeout = 30 * time.Minute

// NewPackageSetRerunAction returns the gantry_package_set_rerun action.
func NewPackageSetRerunAction() action.Action { return &packageSetRerunAction{} }

type packageSetRerunAction struct{ actionBase }

type packageSetRerunModel struct {
	Name    types.String `tfsdk:"name"`
	Nodes   []string     `tfsdk:"nodes"`
	Timeout types.String `tfsdk:"timeout"`
}

func (a *packageSetRerunAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_package_set_rerun"
}

func (a *packageSetRerunAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Runs a package set again on chosen nodes — the node reset Skyhook users do with `kubectl skyhook " +
			"reset`: the set's record on each node (annotations `gantry.dev/state_<set>` and `gantry.dev/status_<set>`) is " +
			"removed, so the reconciler runs every package's stages there again as on a new node. Refused for a node where " +
			"the set is in progress or holds a cordon (wait until it is complete or erroring). Waits until the set is " +
			"`complete` on every chosen node; fails naming the node and the reconciler's reason otherwise.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the PackageSet (cluster-scoped)."},
			"nodes": schema.ListAttribute{Required: true, ElementType: types.StringType,
				MarkdownDescription: "Names of the nodes to run the set on again; each must be selected by the set and hold its record.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1), uniqueValues{}}},
			"timeout": actionTimeoutAttribute(packageSetRerunTimeout),
		},
	}
}

// Invoke resets the chosen nodes' records of the set and waits until they are complete again.
func (a *packageSetRerunAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m packageSetRerunModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	set := m.Name.ValueString()
	state, status := v1alpha1.AnnotationNodeStatePrefix+set, v1alpha1.AnnotationNodeStatusPrefix+set
	var c *kube.Clients
	waited, err := a.annotateAndWait(ctx, resp, set, actionTimeout(m.Timeout, packageSetRerunTimeout), packageSetRequest{
		annotate: func(ctx context.Context, clients *kube.Clients, _ *unstructured.Unstructured, diags *diag.Diagnostics) bool {
			c = clients
			if why := rerunRefusal(ctx, c, set, m.Nodes); why != "" {
				diags.AddError("PackageSet Rerun Refused", fmt.Sprintf("PackageSet %s cannot run again on %s: %s.", set, strings.Join(m.Nodes, ", "), why))
				return false
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`, state, status)
			for _, n := range m.Nodes {
				if _, err := c.Core.CoreV1().Nodes().Patch(ctx, n, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager + "-actions"}); err != nil {
					diags.Append(apiDiagnostic("Node", "Resetting", err))
					return false
				}
				progress(resp, fmt.Sprintf("PackageSet %s: node %s reset; its packages run again", set, n))
			}
			return true
		},
		// The nodes' annotations say when the set is complete again; they change without the
		// set changing, so the check also runs every actionPollInterval.
		recheck: actionPollInterval,
		check: func(ctx context.Context, u *unstructured.Unstructured) (bool, string, error) {
			var pending []string
			for _, n := range m.Nodes {
				node, err := c.Core.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				switch s := node.Annotations[status]; s {
				case string(v1alpha1.StatusComplete):
				case string(v1alpha1.StatusErroring), string(v1alpha1.StatusBlocked):
					// The set's reason as the API server has it now (the copy u may lag the node).
					if fresh, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(ctx, set, metav1.GetOptions{}); err == nil {
						u = fresh
					}
					return false, "", fmt.Errorf("node %s is %s: %s", n, s, failingReason(wait.PackageSet, u))
				default:
					pending = append(pending, n+" "+orDash(s))
				}
			}
			if len(pending) == 0 {
				return true, "", nil
			}
			return false, "waiting for " + strings.Join(pending, ", "), nil
		},
	})
	if !waited {
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("PackageSet Rerun Failed", fmt.Sprintf("PackageSet %s did not complete again on %s: %s.", set, strings.Join(m.Nodes, ", "), err))
		return
	}
	progress(resp, fmt.Sprintf("PackageSet %s: complete again on %s", set, strings.Join(m.Nodes, ", ")))
}

// rerunRefusal says why the set cannot be run again on nodes ("" when it can): a node that
// does not exist, holds no record of the set, or where the set is in progress or holds a
// cordon (resetting it then would lose track of a running flow).
func rerunRefusal(ctx context.Context, c *kube.Clients, set string, nodes []string) string {
	var why []string
	for _, n := range nodes {
		node, err := c.Core.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			why = append(why, fmt.Sprintf("node %s: %s", n, err))
			continue
		}
		a := node.Annotations
		switch s := a[v1alpha1.AnnotationNodeStatusPrefix+set]; {
		case s == "" && a[v1alpha1.AnnotationNodeStatePrefix+set] == "":
			why = append(why, fmt.Sprintf("node %s holds no record of the set (not selected, or not started yet)", n))
		case a[v1alpha1.AnnotationCordonPrefix+set] != "":
			why = append(why, fmt.Sprintf("the set holds node %s's cordon", n))
		case slices.Contains([]string{string(v1alpha1.StatusInProgress), string(v1alpha1.StatusWaiting)}, s):
			why = append(why, fmt.Sprintf("the set is %s on node %s", s, n))
		}
	}
	return strings.Join(why, "; ")
}
