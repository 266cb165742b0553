package workspace

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// Node is what the Pending-trap check needs to know about one node.
type Node struct {
	Name   string
	Labels map[string]string
	// Ready: the node's Ready condition is True. Unschedulable: spec.unschedulable (cordoned).
	Ready, Unschedulable bool
	// Taints are spec.taints.
	Taints []corev1.Taint
	// AllocatableGPU is status.allocatable["nvidia.com/gpu"] (0 when absent), or of the
	// workspace's accelerator resource after ForAccelerator (a MIG profile's slices).
	AllocatableGPU int64
	// Allocatable is status.allocatable (read by ForAccelerator).
	Allocatable corev1.ResourceList
	// UsedGPU is the nvidia.com/gpu other pods bound to the node request (not the workspace's
	// own pods, not terminated pods: hardware.GPUsInUse); 0 when not counted.
	UsedGPU int64
}

// FreeGPU is AllocatableGPU less UsedGPU, never below 0.
func (n Node) FreeGPU() int64 { return max(0, n.AllocatableGPU-n.UsedGPU) }

// Capacity is what the cluster's nodes offer a workspace, from CapacityOf.
type Capacity struct {
	// Selector is the node selector the pods use, rendered "k=v,k=v" (sorted), for messages.
	Selector string
	// GPUsPerReplica is spec.resource.gpuCount (1 with a MIG partition).
	GPUsPerReplica int32
	// Resource is the accelerator resource counted: nvidia.com/gpu, or a MIG profile's
	// nvidia.com/mig-<profile> (set by the caller; "" reads as nvidia.com/gpu).
	Resource string
	// MatchingNodes counts Ready, schedulable nodes whose labels match the selector and whose
	// NoSchedule/NoExecute taints the pods tolerate. AllNodes counts every node.
	MatchingNodes, AllNodes int
	// NotReadyMatching counts matching nodes that are NotReady or cordoned (not in MatchingNodes).
	NotReadyMatching int
	// TotalGPUs is the sum of allocatable nvidia.com/gpu over the matching nodes; FreeGPUs
	// the sum of what other pods leave free there (Node.FreeGPU).
	TotalGPUs, FreeGPUs int64
	// FreeByNode is "<node> <free>/<allocatable>" per matching node with GPUs, sorted by
	// name, at most maxFreeListed (for messages).
	FreeByNode []string
	// PlaceableReplicas is how many replicas the matching nodes can hold besides the other
	// pods on them: the sum over them of free GPUs / GPUsPerReplica (a replica's GPUs are on
	// one node); with GPUsPerReplica 0 it is unbounded (capped at 1<<30).
	PlaceableReplicas int32
	// MissingLabels are the selector entries no node carries at all (hardware.MissingLabels:
	// "key=value (TEE type tdx)"), named in the no-matching-node message.
	MissingLabels []string
}

// maxFreeListed bounds Capacity.FreeByNode.
const maxFreeListed = 10

// CapacityOf computes the Capacity of nodes for pods with the given node selector, label
// requirements (spec.resource.labelSelectorExpressions; nil: none), tolerations and GPUs per
// replica: what the matching Ready, schedulable nodes have free (allocatable less what other
// pods request, Node.UsedGPU), the KAITO "Pending trap" check. Requirements the label
// selector parser rejects match no node (the CRD's rules keep them out).
func CapacityOf(nodes []Node, selector map[string]string, exprs []metav1.LabelSelectorRequirement, tolerations []corev1.Toleration, gpusPerReplica int32) Capacity {
	c := Capacity{Selector: renderSelector(selector, exprs), GPUsPerReplica: gpusPerReplica, AllNodes: len(nodes)}
	reqs, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: exprs})
	if err != nil {
		reqs = labels.Nothing()
	}
	var placeable int64
	all := make([]map[string]string, len(nodes))
	for i := range nodes {
		all[i] = nodes[i].Labels
	}
	c.MissingLabels = hardware.MissingLabels(all, selector)
	for _, n := range nodes {
		if !matches(n.Labels, selector) || !reqs.Matches(labels.Set(n.Labels)) || !tolerates(tolerations, n.Taints) {
			continue
		}
		if !n.Ready || n.Unschedulable {
			c.NotReadyMatching++
			continue
		}
		c.MatchingNodes++
		c.TotalGPUs += n.AllocatableGPU
		c.FreeGPUs += n.FreeGPU()
		if n.AllocatableGPU > 0 && len(c.FreeByNode) < maxFreeListed {
			c.FreeByNode = append(c.FreeByNode, fmt.Sprintf("%s %d/%d", n.Name, n.FreeGPU(), n.AllocatableGPU))
		}
		if gpusPerReplica > 0 {
			placeable += n.FreeGPU() / int64(gpusPerReplica)
		} else {
			placeable = 1 << 30
		}
	}
	c.PlaceableReplicas = int32(min(placeable, 1<<30))
	sort.Strings(c.FreeByNode)
	return c
}

// Accelerator is the resource each replica of a resolved workspace requests and how many:
// nvidia.com/gpu × spec.resource.gpuCount, or one nvidia.com/mig-<profile> with a MIG
// partition (as KAITO).
func Accelerator(w *v1alpha1.Workspace) (corev1.ResourceName, int32) {
	if p := w.Spec.Resource.Partition; p != nil {
		return corev1.ResourceName(MIGResource(p.Profile)), 1
	}
	return hardware.ResourceGPU, w.Spec.Resource.GPUCount
}

// ForAccelerator returns nodes with AllocatableGPU read from their allocatable res (a copy;
// UsedGPU cleared); nodes itself for nvidia.com/gpu.
func ForAccelerator(nodes []Node, res corev1.ResourceName) []Node {
	if res == hardware.ResourceGPU {
		return nodes
	}
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		q := n.Allocatable[res]
		n.AllocatableGPU, n.UsedGPU = q.Value(), 0
		out[i] = n
	}
	return out
}

func (c Capacity) noMatchMessage() string {
	msg := fmt.Sprintf("no Ready node matches the workspace's requirements (node selector %s) among the cluster's %d nodes", c.Selector, c.AllNodes)
	if len(c.MissingLabels) > 0 {
		msg += "; no node has the label " + strings.Join(c.MissingLabels, ", no node has the label ")
	}
	if c.NotReadyMatching > 0 {
		msg += fmt.Sprintf("; %d matching node(s) are NotReady or cordoned", c.NotReadyMatching)
	}
	return msg + "; the workspace proceeds on its own when such a node is added"
}

func (c Capacity) insufficientMessage(replicas int32) string {
	free := ""
	if len(c.FreeByNode) > 0 {
		free = "; free/allocatable per node: " + strings.Join(c.FreeByNode, ", ")
		if c.MatchingNodes > len(c.FreeByNode) {
			free += ", ..."
		}
	}
	res, unit := c.Resource, "GPUs"
	if res == "" || res == string(hardware.ResourceGPU) {
		res = string(hardware.ResourceGPU)
	} else {
		unit = res
	}
	return fmt.Sprintf("%d replica(s) of %d %s each need more than the %d matching Ready node(s) have free (%d of %d %s free, room for %d replica(s)%s; node selector %s); the workspace proceeds on its own when %s are freed or capacity is added",
		replicas, c.GPUsPerReplica, res, c.MatchingNodes, c.FreeGPUs, c.TotalGPUs, unit, c.PlaceableReplicas, free, c.Selector, unit)
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if have, ok := labels[k]; !ok || have != v {
			return false
		}
	}
	return true
}

// tolerates: every NoSchedule/NoExecute taint of the node is tolerated.
func tolerates(tols []corev1.Toleration, taints []corev1.Taint) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range tols {
			if tols[j].ToleratesTaint(t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// renderSelector is the node selector and the label requirements as kubectl writes a
// selector: "k=v,k2=v2" sorted, then each requirement ("zone in (a,b)", "!spot").
func renderSelector(sel map[string]string, exprs []metav1.LabelSelectorRequirement) string {
	if len(sel) == 0 && len(exprs) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(sel)+len(exprs))
	for k, v := range sel {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	for _, e := range exprs {
		s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{e}})
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s %s %v (invalid: %v)", e.Key, e.Operator, e.Values, err))
			continue
		}
		parts = append(parts, s.String())
	}
	return strings.Join(parts, ",")
}
