package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// Node provisioning through Karpenter NodeClaims, as KAITO provisions the nodes of a
// workspace's instanceType (KAITO's pkg/utils/nodeclaim: one NodeClaim per missing node, a fake
// NodePool label so Karpenter's own provisioner leaves them alone, do-not-disrupt, the
// sku=gpu:NoSchedule taint its pods tolerate).
var (
	// NodeClaimGVK is Karpenter's NodeClaim (cluster-scoped).
	NodeClaimGVK = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}
	// NodeClaimListGVK lists NodeClaims.
	NodeClaimListGVK = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaimList"}
)

const (
	// LabelWorkspaceNamespace is the label naming the workspace's namespace on its NodeClaims
	// (NodeClaims are cluster-scoped; with LabelWorkspace it selects one workspace's claims).
	LabelWorkspaceNamespace = "gantry.dev/workspace-namespace"
	// NodePoolName is the karpenter.sh/nodepool label of the claims: no NodePool of that name
	// exists, so Karpenter's provisioner and disruption never act on them (as KAITO's "kaito").
	NodePoolName = "gantry"
	// labelNodePool is Karpenter's NodePool label and requirement key.
	labelNodePool = "karpenter.sh/nodepool"
	// annotationDoNotDisrupt keeps Karpenter's consolidation off the claims' nodes.
	annotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// TaintSKUKey and TaintSKUValue are the NoSchedule taint of provisioned nodes (KAITO's
	// sku=gpu), which every workspace pod tolerates.
	TaintSKUKey   = "sku"
	TaintSKUValue = "gpu"
	// ReasonProvisioningNodes (ResourceReady=False, not Stalled): NodeClaims were made and
	// their nodes are on the way.
	ReasonProvisioningNodes = "ProvisioningNodes"
)

// SKUToleration is the toleration of the sku=gpu:NoSchedule taint of provisioned nodes.
var SKUToleration = corev1.Toleration{Key: TaintSKUKey, Operator: corev1.TolerationOpEqual, Value: TaintSKUValue, Effect: corev1.TaintEffectNoSchedule}

// NodeClass is the Karpenter node class a NodeClaim references (spec.nodeClassRef): e.g.
// karpenter.kwok.sh/KWOKNodeClass/default (the local cluster), kaito.sh/KaitoNodeClass/default
// (AKS), karpenter.k8s.aws/EC2NodeClass/default. The zero value means none is configured.
type NodeClass struct {
	Group, Kind, Name string
}

// ParseNodeClass parses "GROUP/KIND/NAME" (the reconciler's --node-class). "" gives the zero
// NodeClass; anything but three non-empty parts is an error naming the expected shape.
func ParseNodeClass(s string) (NodeClass, error) {
	if s == "" {
		return NodeClass{}, nil
	}
	p := strings.Split(s, "/")
	if len(p) != 3 || p[0] == "" || p[1] == "" || p[2] == "" {
		return NodeClass{}, fmt.Errorf("node class %q: want GROUP/KIND/NAME, e.g. karpenter.k8s.aws/EC2NodeClass/default", s)
	}
	return NodeClass{Group: p[0], Kind: p[1], Name: p[2]}, nil
}

func (c NodeClass) String() string { return c.Group + "/" + c.Kind + "/" + c.Name }

// Provisioning is what a pass knows about node provisioning for one workspace.
type Provisioning struct {
	// Wanted: spec.resource.instanceType is set and spec.resource.provisionNodes is not false.
	Wanted bool
	// Available: the API server serves karpenter.sh/v1 NodeClaims.
	Available bool
	// NodeClass is the reconciler's --node-class (zero: not configured: nothing is created).
	NodeClass NodeClass
	// InstanceType is spec.resource.instanceType; ReplicasPerNode how many replicas one node of
	// it holds (its GPUs / gpuCount, at least 1).
	InstanceType    string
	ReplicasPerNode int32
	// Claims are the NodeClaims labelled for this workspace (ClaimFacts), any state.
	Claims []Claim
}

// Claim is one NodeClaim's state, read by ClaimFacts.
type Claim struct {
	Name string
	// Ready: its Ready condition is True (Karpenter: launched, registered, initialized).
	Ready bool
	// Deleting: deletionTimestamp is set.
	Deleting bool
	// Step is the first of Launched, Registered, Initialized that is not True, with its
	// reason and message when Karpenter gave them ("" when Ready).
	Step string
}

// WantsProvisioning reports whether w (resolved) asks for node provisioning: an instance type
// and provisionNodes not false (KAITO provisions by default).
func WantsProvisioning(w *v1alpha1.Workspace) bool {
	r := w.Spec.Resource
	return r.InstanceType != "" && (r.ProvisionNodes == nil || *r.ProvisionNodes)
}

// ReplicasPerNode is how many replicas of w (resolved) a node of its instance type holds:
// the type's GPUs / gpuCount (1 when either is unknown or zero).
func ReplicasPerNode(w *v1alpha1.Workspace) int32 {
	it, ok := hardware.LookupInstanceType(w.Spec.Resource.InstanceType)
	if !ok || w.Spec.Resource.GPUCount <= 0 || it.GPUCount < w.Spec.Resource.GPUCount {
		return 1
	}
	return it.GPUCount / w.Spec.Resource.GPUCount
}

// ClaimName is the name of the workspace namespace/name's i-th NodeClaim:
// "ws-<10 hex of sha256(namespace/name)>-<i>". Deterministic, so a claim created twice (a stale
// cache, a reconciler restart) is refused as AlreadyExists instead of duplicated.
func ClaimName(namespace, name string, i int) string {
	h := sha256.Sum256([]byte(namespace + "/" + name))
	return "ws-" + hex.EncodeToString(h[:])[:10] + "-" + strconv.Itoa(i)
}

// ClaimFacts reads a NodeClaim (unstructured: Gantry does not import Karpenter's types).
func ClaimFacts(u *unstructured.Unstructured) Claim {
	c := Claim{Name: u.GetName(), Deleting: u.GetDeletionTimestamp() != nil}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	byType := map[string]map[string]any{}
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok {
			t, _ := m["type"].(string)
			byType[t] = m
		}
	}
	if m := byType["Ready"]; m != nil && m["status"] == "True" {
		c.Ready = true
		return c
	}
	for _, t := range []string{"Launched", "Registered", "Initialized"} {
		m := byType[t]
		if m == nil {
			c.Step = "waiting for " + t
			return c
		}
		if m["status"] != "True" {
			c.Step = fmt.Sprintf("%s=%v", t, m["status"])
			if r, _ := m["reason"].(string); r != "" {
				c.Step += " (" + r + ")"
			}
			if msg, _ := m["message"].(string); msg != "" {
				c.Step += ": " + msg
			}
			return c
		}
	}
	c.Step = "waiting for Ready"
	return c
}

// DesiredNodeClaim is the NodeClaim named name for w (resolved; w.Namespace/w.Name label it)
// on node class nc, as KAITO writes them: requirements karpenter.sh/nodepool In
// [NodePoolName], kubernetes.io/os In [linux], then every entry of the pods' node selector
// (selector: hardware.Placement's, with node.kubernetes.io/instance-type) as In [value], then
// spec.resource.labelSelectorExpressions as they are (zone, spot, ...), so Karpenter makes a
// node the pods can use or says in the claim's Launched condition why it cannot; the
// sku=gpu:NoSchedule taint; karpenter.sh/do-not-disrupt.
func DesiredNodeClaim(w *v1alpha1.Workspace, name string, nc NodeClass, selector map[string]string) *unstructured.Unstructured {
	req := func(k, op string, vs ...string) map[string]any {
		r := map[string]any{"key": k, "operator": op}
		if len(vs) > 0 {
			vals := make([]any, len(vs))
			for i, v := range vs {
				vals[i] = v
			}
			r["values"] = vals
		}
		return r
	}
	reqs := []any{req(labelNodePool, "In", NodePoolName), req(corev1.LabelOSStable, "In", "linux")}
	if _, ok := selector[hardware.LabelInstanceType]; !ok && w.Spec.Resource.InstanceType != "" {
		reqs = append(reqs, req(hardware.LabelInstanceType, "In", w.Spec.Resource.InstanceType))
	}
	keys := slices.Sorted(maps.Keys(selector))
	for _, k := range keys {
		reqs = append(reqs, req(k, "In", selector[k]))
	}
	for _, e := range w.Spec.Resource.LabelSelectorExpressions {
		reqs = append(reqs, req(e.Key, string(e.Operator), e.Values...))
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": nc.Group, "kind": nc.Kind, "name": nc.Name},
			"taints":       []any{map[string]any{"key": TaintSKUKey, "value": TaintSKUValue, "effect": string(corev1.TaintEffectNoSchedule)}},
			"requirements": reqs,
		},
	}}
	u.SetGroupVersionKind(NodeClaimGVK)
	u.SetName(name)
	u.SetLabels(map[string]string{LabelWorkspace: w.Name, LabelWorkspaceNamespace: w.Namespace, labelNodePool: NodePoolName})
	u.SetAnnotations(map[string]string{annotationDoNotDisrupt: "true"})
	return u
}

// claimsToCreate returns the names of the NodeClaims to create this pass: enough nodes of the
// instance type for the replicas the matching nodes have no room for, less the claims already
// on their way (not Ready, not deleting), and never more claims in all than the replicas need
// nodes (ceil(replicas / replicas per node)): a claim whose node is Ready but does not match
// the workspace's selector is not replaced by another. Names are the lowest free ClaimName
// indices.
func claimsToCreate(f Facts, namespace, name string) []string {
	pv := f.Provisioning
	missing := f.Replicas - f.Capacity.PlaceableReplicas
	if missing <= 0 {
		return nil
	}
	per := max(pv.ReplicasPerNode, 1)
	need := int((missing + per - 1) / per)
	room := int((f.Replicas + per - 1) / per)
	used := map[string]bool{}
	for _, c := range pv.Claims {
		used[c.Name] = true
		if !c.Deleting {
			room--
			if !c.Ready {
				need--
			}
		}
	}
	need = min(need, room)
	var out []string
	for i := 0; len(out) < need; i++ {
		if n := ClaimName(namespace, name, i); !used[n] {
			out = append(out, n)
		}
	}
	return out
}

// provisioningCond is ResourceReady while nodes are provisioned (ReasonProvisioningNodes, not
// Stalled): what is being created and where each claim stands; or, when provisioning cannot
// run, capacity's own condition with the reason appended (still Stalled). ok is false when
// provisioning does not apply (not wanted, or nothing is missing).
func provisioningCond(f Facts, capacity *cond, creating []string) (c *cond, progress bool) {
	pv := f.Provisioning
	if !pv.Wanted || capacity == nil || capacity.reason == ReasonInvalidSpec {
		return capacity, false
	}
	switch {
	case !pv.Available:
		return &cond{false, capacity.reason, capacity.message + "; node provisioning is on (spec.resource.provisionNodes) but the cluster has no Karpenter NodeClaim API (karpenter.sh/v1), so no nodes are created"}, false
	case pv.NodeClass == (NodeClass{}):
		return &cond{false, capacity.reason, capacity.message + "; node provisioning is on (spec.resource.provisionNodes) but the reconciler has no Karpenter node class to create NodeClaims with (its --node-class flag, chart value nodeProvisioning.nodeClass)"}, false
	}
	var parts []string
	for _, c := range pv.Claims {
		switch {
		case c.Deleting:
			parts = append(parts, c.Name+" (deleting)")
		case c.Ready:
			parts = append(parts, c.Name+" (Ready)")
		default:
			parts = append(parts, c.Name+" ("+c.Step+")")
		}
	}
	for _, n := range creating {
		parts = append(parts, n+" (creating)")
	}
	slices.Sort(parts)
	msg := fmt.Sprintf("provisioning nodes of %s through Karpenter NodeClaims (node class %s): %s; the nodes the workspace can use now: %s",
		pv.InstanceType, pv.NodeClass, strings.Join(parts, ", "), capacity.message)
	return &cond{false, ReasonProvisioningNodes, msg}, true
}

// claimNames are the names of claims, sorted (status.nodeClaims).
func claimNames(claims []Claim, creating []string) []string {
	out := slices.Clone(creating)
	for _, c := range claims {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ReasonNodesReleased (ResourceReady=False on a Succeeded tuning workspace, not Stalled): the
// run succeeded and spec.tuning.releaseNodesOnSuccess is set, so the workspace's NodeClaims
// were deleted (releaseNodes); the Workspace, its Job and the output are kept.
const ReasonNodesReleased = "NodesReleased"

// releaseNodes applies spec.tuning.releaseNodesOnSuccess (kaito-project/kaito #1107: a tuning
// run's GPUs are not held until the workspace is destroyed) to a tuning pass p: once the Job has
// completed no NodeClaim is created; once the state is Succeeded every claim of the workspace
// not yet deleting is deleted (ActionDeleteNodeClaims, Decision.ReleaseEvent naming them),
// ResourceReady becomes False with reason NodesReleased (the state stays Succeeded, Ready stays
// True), and the pass is re-run every WaitPoll while a claim is left so status.nodeClaims
// empties. The condition is the record: carried by later passes once the claims are gone. A
// workspace that made no claims (its nodes existed) keeps its ResourceReady. Failed runs never
// come here (tuning).
func releaseNodes(f Facts, p *pass, d *Decision) {
	if !f.ReleaseNodesOnSuccess {
		return
	}
	d.CreateClaims = nil
	d.Actions = slices.DeleteFunc(d.Actions, func(a Action) bool { return a == ActionCreateNodeClaims })
	if p.state != v1alpha1.WorkspaceStateSucceeded || len(f.Provisioning.Claims) == 0 {
		return
	}
	for _, c := range f.Provisioning.Claims {
		if !c.Deleting {
			d.DeleteClaims = append(d.DeleteClaims, c.Name)
		}
	}
	slices.Sort(d.DeleteClaims)
	out := ""
	if f.Output != "" {
		out = " (" + f.Output + ")"
	}
	kept := fmt.Sprintf("the Workspace, its Job %s and the output%s are kept", ObjectName(f.Name), out)
	p.resource = cond{false, ReasonNodesReleased, "the tuning run succeeded and spec.tuning.releaseNodesOnSuccess is set: its NodeClaims were deleted and Karpenter removes their nodes; " + kept}
	if len(d.DeleteClaims) > 0 {
		d.Actions = append(d.Actions, ActionDeleteNodeClaims)
		d.ReleaseEvent = &Event{Type: corev1.EventTypeNormal, Reason: ReasonNodesReleased,
			Message: fmt.Sprintf("the tuning run succeeded: deleting its NodeClaims %s (spec.tuning.releaseNodesOnSuccess); %s", strings.Join(d.DeleteClaims, ", "), kept)}
	}
	d.RequeueAfter = WaitPoll
}

// TuningOutput says where w's tuning output goes, for messages: "image <ref>" or "PVC <name>";
// "" for an inference workspace.
func TuningOutput(w *v1alpha1.Workspace) string {
	switch t := w.Spec.Tuning; {
	case t == nil:
		return ""
	case t.Output.Image != "":
		return "image " + t.Output.Image
	case t.Output.PVC != "":
		return "PVC " + t.Output.PVC
	}
	return ""
}
