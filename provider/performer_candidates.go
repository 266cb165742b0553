package provider

// gantry_performer's candidate_nodes: how many nodes can take the performer as the reconciler
// places it (hardware.Place). At plan the nodes are only checked for a warning (none fits, or none
// has room now); the count is known after apply because Terraform requires plan-time values to
// hold at apply, which a count of the cluster's nodes cannot promise. The attribute holds what the
// spec and nodes decide (labels, taints, allocatable); what changes by the minute is in the
// warning only.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

const (
	// candidateReadTimeout bounds the reads of one performer's count at plan (nodes, pods).
	candidateReadTimeout = 20 * time.Second
	// candidateNamed bounds the nodes a candidate warning names.
	candidateNamed = 5
	// candidatesSkipped is the summary of the warning of a plan that could not count.
	candidatesSkipped = "Candidate Nodes Skipped"
)

// candidateNodesAttribute is the schema of gantry_performer's candidate_nodes.
func candidateNodesAttribute() schema.Int64Attribute {
	return schema.Int64Attribute{
		Computed: true,
		MarkdownDescription: "Number of the cluster's nodes that can take the performer as the reconciler places it.\n\nIt is counted when the " +
			"performer's spec changes (create, or a change of any argument the `Performer`'s spec holds): the nodes whose labels match " +
			"the node selector `hardware_requirements` and `node_selector` make and the required node affinity of `affinity`, whose own " +
			"`NoSchedule`/`NoExecute` taints the performer tolerates (`tolerations`, and the `nvidia.com/gpu` taint for GPUs), and whose " +
			"allocatable covers its requests (`gpu_count` devices, `resources`). A node that is cordoned, not Ready, or carries another taint " +
			"Kubernetes, Karpenter or a package set's runtime-required bring-up takes off by itself still counts.\n\n" +
			"The plan counts the nodes too and warns when none can take the performer (naming what it asks and the nearest nodes) or " +
			"when none of those that can has room now (devices other pods request, cordons); the attribute itself is *known after apply*, " +
			"counted when the apply runs: Terraform plans again at apply and fails the apply when a value known at plan comes out " +
			"different, as a count of nodes does when nodes join or leave in between (an autoscaled pool, a workspace's NodeClaims in " +
			"the same apply). While the spec does not change the count keeps its value and the plan makes no API call. It is `null` " +
			"after an import, in list results, and when the apply could not list the nodes. Counting lists nodes and pods (`list` on " +
			"both, as the least-privilege runner's inventory role grants).",
	}
}

// planCandidates sets candidate_nodes in resp.Plan: the state's value when the Performer's
// spec does not change (no API call), else unknown (counted at apply, prepareCandidates), with
// a warning when no node fits the planned spec or none of those has room now; one
// "Candidate Nodes Skipped" warning saying why when the configuration is not wholly known or
// the nodes cannot be listed. Never an error.
func (r *performerResource) planCandidates(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	at := path.Root("candidate_nodes")
	skip := func(why string) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, types.Int64Unknown())...)
		if why != "" {
			resp.Diagnostics.AddAttributeWarning(at, candidatesSkipped, why)
		}
	}
	if !req.State.Raw.IsNull() && req.Plan.Raw.Equal(req.State.Raw) {
		return // a no-op plan: the state's count stands, nothing is read or mapped
	}
	if !req.Config.Raw.IsFullyKnown() {
		skip("The nodes that can take the performer are counted from its whole configuration, and a value of it is known only at apply: " +
			"they are counted when the apply plans.")
		return
	}
	var plan performerModelV0
	if d := req.Plan.Get(ctx, &plan); d.HasError() {
		skip("")
		return
	}
	planned, err := expandPerformer(&plan)
	if err != nil {
		skip("") // the validators and the apply report the mapping error
		return
	}
	if keep, ok := unchangedCandidates(ctx, req.State, planned); ok {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, keep)...)
		return
	}
	c, err := countCandidates(ctx, r.data, planned)
	if err != nil {
		skip(fmt.Sprintf("The nodes that can take performer %s were not counted: %s. The plan is otherwise complete; they are counted when the apply runs.",
			objectID(planned.GetNamespace(), planned.GetName()), err))
		return
	}
	// Known after apply, never at plan: Terraform plans again at apply, in another provider
	// process that lists the nodes again, and fails the apply ("Provider produced
	// inconsistent final plan") when a value known at plan comes out different, as it does
	// when nodes join or leave in between (an autoscaled pool, a workspace's NodeClaims in
	// the same apply). The plan's warnings carry what the count says now.
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, types.Int64Unknown())...)
	if c.warning != "" {
		resp.Diagnostics.AddAttributeWarning(at, c.summary, c.warning)
	}
}

// prepareCandidates is gantry_performer's kindOps.prepare: candidate_nodes planned unknown
// (a spec change) is counted now, from the apply process's cluster reads (the nodes listed once
// for every performer of the apply); null when they cannot be counted (the apply goes on).
func prepareCandidates(ctx context.Context, data *providerData, _ tfsdk.Config, plan, _ *performerModelV0) diag.Diagnostics {
	if !plan.CandidateNodes.IsUnknown() {
		return nil
	}
	plan.CandidateNodes = types.Int64Null()
	planned, err := expandPerformer(plan)
	if err != nil {
		return nil // the apply reports the mapping error
	}
	if c, err := countCandidates(ctx, data, planned); err == nil {
		plan.CandidateNodes = types.Int64Value(int64(c.fit))
	} else {
		tflog.Debug(ctx, "performer candidate nodes not counted at apply", map[string]interface{}{"error": err.Error()})
	}
	return nil
}

// unchangedCandidates returns the state's candidate_nodes (null when it has none) and true
// when state holds a performer whose spec equals planned's (apiequality.Semantic); false on
// create, on a spec change, or when the state cannot be read or mapped.
func unchangedCandidates(ctx context.Context, state tfsdk.State, planned *unstructured.Unstructured) (types.Int64, bool) {
	if state.Raw.IsNull() {
		return types.Int64Null(), false
	}
	var prior performerModelV0
	if d := state.Get(ctx, &prior); d.HasError() {
		return types.Int64Null(), false
	}
	was, err := expandPerformer(&prior)
	if err != nil || !apiequality.Semantic.DeepEqual(was.Object["spec"], planned.Object["spec"]) {
		return types.Int64Null(), false
	}
	return candidateKnownOrNull(prior.CandidateNodes), true
}

// candidateKnownOrNull is v, or null when v is unknown.
func candidateKnownOrNull(v types.Int64) types.Int64 {
	if v.IsUnknown() {
		return types.Int64Null()
	}
	return v
}

// candidateCount is a performer's count at plan: fit nodes, and the warning (summary and
// text; both "" when there is none).
type candidateCount struct {
	fit              int
	summary, warning string
}

// countCandidates counts the nodes that fit planned (a Performer as expandPerformer makes it)
// and words the warning: none fits (what it asks, the nearest nodes), or none of those that
// fit has room now (their reasons). It reads the nodes, and the pods when some node fits and
// the performer requests resources, from the provider's clusterReads. Errors: the spec
// cannot be placed (the validators report it), no cluster, a list of nodes that failed (the
// API server's words). A failed list of pods is not an error: the count stands and the
// warning says room was not checked.
func countCandidates(ctx context.Context, data *providerData, planned *unstructured.Unstructured) (candidateCount, error) {
	var p v1alpha1.Performer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(planned.Object, &p); err != nil {
		return candidateCount{}, err
	}
	pl, err := hardware.Place(p.Spec.HardwareRequirements, p.Spec.Scheduling)
	if err != nil {
		return candidateCount{}, err
	}
	res, err := pl.ContainerResources(p.Spec.Resources.Core())
	if err != nil {
		return candidateCount{}, err
	}
	requests := hardware.EffectiveRequests(res)
	if data == nil {
		return candidateCount{}, errors.New("the provider is not configured")
	}
	view := &data.reads
	start := time.Now()
	nodes, err := view.listNodes(ctx, data)
	if err != nil {
		return candidateCount{}, err
	}
	id := objectID(p.Namespace, p.Name)
	fit, _ := hardware.Candidates(pl, requests, nodes, nil)
	if len(fit) == 0 {
		return candidateCount{summary: "No Node Can Take Performer", warning: noFitWarning(id, pl, requests, nodes)}, nil
	}
	var inUse map[string]corev1.ResourceList
	if len(requests) > 0 {
		pods, err := view.listPods(ctx, data)
		if err != nil {
			return candidateCount{fit: len(fit), summary: "Performer Room Not Checked", warning: fmt.Sprintf(
				"%d node(s) can take performer %s; whether one has %s free now was not checked: %s.", len(fit), id, hardware.RequestsString(requests), err)}, nil
		}
		inUse = hardware.RequestsInUse(pods, requests, replacedPod(&p))
	}
	_, free := hardware.Candidates(pl, requests, nodes, inUse)
	tflog.Debug(ctx, "performer candidate nodes", map[string]interface{}{"performer": id, "nodes": len(nodes), "fit": len(fit), "free": len(free),
		"ms": time.Since(start).Milliseconds()})
	if len(free) == 0 {
		return candidateCount{fit: len(fit), summary: "No Node Has Room for Performer Now", warning: busyWarning(id, pl, requests, nodes, inUse, len(fit))}, nil
	}
	return candidateCount{fit: len(fit)}, nil
}

// clusterReads is what the plans of one provider process read from the cluster for the
// performers' counts and the package sets' rollout previews (fleetView takes its nodes from
// here): the nodes and the non-terminated pods, each listed once (by the first plan that needs
// it, within candidateReadTimeout) and shared; a failed list is shared too.
type clusterReads struct {
	nodesOnce, podsOnce sync.Once
	nodes               []corev1.Node
	pods                []corev1.Pod
	nodesErr, podsErr   error
}

// listNodes returns the cluster's nodes. Errors: no cluster (d.get), or the list failed
// ("listing nodes: " and the API server's words).
func (v *clusterReads) listNodes(ctx context.Context, d *providerData) ([]corev1.Node, error) {
	v.nodesOnce.Do(func() {
		c, _, err := d.get()
		if err != nil {
			v.nodesErr = err
			return
		}
		ctx, cancel := context.WithTimeout(ctx, candidateReadTimeout)
		defer cancel()
		list, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			v.nodesErr = fmt.Errorf("listing nodes: %w", err)
			return
		}
		v.nodes = list.Items
	})
	return v.nodes, v.nodesErr
}

// listPods returns the pods of every namespace not Succeeded or Failed (the API server
// filters by phase; hardware.RequestsInUse filters again). Errors as listNodes ("listing
// pods: ...").
func (v *clusterReads) listPods(ctx context.Context, d *providerData) ([]corev1.Pod, error) {
	v.podsOnce.Do(func() {
		c, _, err := d.get()
		if err != nil {
			v.podsErr = err
			return
		}
		ctx, cancel := context.WithTimeout(ctx, candidateReadTimeout)
		defer cancel()
		list, err := c.Core.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
		if err != nil {
			v.podsErr = fmt.Errorf("listing pods: %w", err)
			return
		}
		v.pods = list.Items
	})
	return v.pods, v.podsErr
}

// replacedPod tells the pods whose requests a spec change frees before the new Pod is placed:
// with strategy Recreate the performer's own Pod (label gantry.dev/performer=<name> in its
// namespace), deleted before the new one is created; nil with RollingUpdate, whose new Pod
// is placed while the old one runs (maxSurge 1).
func replacedPod(p *v1alpha1.Performer) func(*corev1.Pod) bool {
	if p.Spec.Strategy == v1alpha1.PerformerRollingUpdate {
		return nil
	}
	return func(pod *corev1.Pod) bool {
		return pod.Namespace == p.Namespace && pod.Labels[v1alpha1.LabelPerformer] == p.Name
	}
}

// noFitWarning words "no node can take performer <id>: it asks for <Asks>, and none of the
// cluster's N nodes has all of it; nearest: ..." and what the apply will do.
func noFitWarning(id string, pl hardware.Placement, requests corev1.ResourceList, nodes []corev1.Node) string {
	msg := fmt.Sprintf("no node can take performer %s: it asks for %s", id, pl.Asks(requests))
	if len(nodes) == 0 {
		msg += ", and the cluster has no nodes"
	} else {
		near := hardware.Nearest(pl, requests, nodes, candidateNamed)
		msg += fmt.Sprintf(", and none of the cluster's %d node(s) has all of it; nearest: %s%s", len(nodes), strings.Join(near, ", "), candidatesMore(len(nodes), len(near)))
	}
	return msg + ". The scheduler cannot place its Pod: the performer goes Failed with the scheduler's message and the apply fails, " +
		"unless such a node joins first."
}

// busyWarning words "none of the N node(s) that fit can take performer <id> now (it requests
// <requests>): ..." with each node's reasons (hardware.Busy) and what the apply will do.
func busyWarning(id string, pl hardware.Placement, requests corev1.ResourceList, nodes []corev1.Node, inUse map[string]corev1.ResourceList, fit int) string {
	busy := hardware.Busy(pl, requests, nodes, inUse, candidateNamed)
	what := ""
	if r := hardware.RequestsString(requests); r != "" {
		what = " (it requests " + r + ")"
	}
	return fmt.Sprintf("none of the %d node(s) that fit can take performer %s now%s: %s%s. Until one can, the scheduler leaves its Pod unschedulable: the performer "+
		"goes Failed with the scheduler's message and the apply fails unless room frees up first; the reconciler keeps retrying with "+
		"backoff, and the performer runs once a node has room.", fit, id, what, strings.Join(busy, ", "), candidatesMore(fit, len(busy)))
}

// candidatesMore is ", and K more" when listed < total, else "".
func candidatesMore(total, listed int) string {
	if listed >= total {
		return ""
	}
	return fmt.Sprintf(", and %d more", total-listed)
}
