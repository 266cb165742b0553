package workspace

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
	// AllocatableGPU is status.allocatable["nvidia.com/gpu"] (0 when absent).
	AllocatableGPU int64
}

// Capacity is what the cluster's nodes offer a workspace, from CapacityOf.
type Capacity struct {
	// Selector is the node selector the pods use, rendered "k=v,k=v" (sorted), for messages.
	Selector string
	// GPUsPerReplica is spec.resource.gpuCount.
	GPUsPerReplica int32
	// MatchingNodes counts Ready, schedulable nodes whose labels match the selector and whose
	// NoSchedule/NoExecute taints the pods tolerate. AllNodes counts every node.
	MatchingNodes, AllNodes int
	// NotReadyMatching counts matching nodes that are NotReady or cordoned (not in MatchingNodes).
	NotReadyMatching int
	// TotalGPUs is the sum of allocatable nvidia.com/gpu over the matching nodes.
	TotalGPUs int64
	// PlaceableReplicas is how many replicas the matching nodes can hold if empty: the sum
	// over them of allocatable GPUs / GPUsPerReplica (a replica's GPUs are on one node); with
	// GPUsPerReplica 0 it is unbounded (capped at 1<<30).
	PlaceableReplicas int32
	// MissingLabels are the selector entries no node carries at all (hardware.MissingLabels:
	// "key=value (TEE type tdx)"), named in the no-matching-node message.
	MissingLabels []string
}

// CapacityOf computes the Capacity of nodes for pods with the given node selector,
// tolerations and GPUs per replica. It is total capacity (allocatable), not free capacity:
// GPUs used by other pods show up as the scheduler's "Insufficient nvidia.com/gpu" instead.
func CapacityOf(nodes []Node, selector map[string]string, tolerations []corev1.Toleration, gpusPerReplica int32) Capacity {
	c := Capacity{Selector: renderSelector(selector), GPUsPerReplica: gpusPerReplica, AllNodes: len(nodes)}
	var placeable int64
	all := make([]map[string]string, len(nodes))
	for i := range nodes {
		all[i] = nodes[i].Labels
	}
	c.MissingLabels = hardware.MissingLabels(all, selector)
	for _, n := range nodes {
		if !matches(n.Labels, selector) || !tolerates(tolerations, n.Taints) {
			continue
		}
		if !n.Ready || n.Unschedulable {
			c.NotReadyMatching++
			continue
		}
		c.MatchingNodes++
		c.TotalGPUs += n.AllocatableGPU
		if gpusPerReplica > 0 {
			placeable += n.AllocatableGPU / int64(gpusPerReplica)
		} else {
			placeable = 1 << 30
		}
	}
	c.PlaceableReplicas = int32(min(placeable, 1<<30))
	return c
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
	return fmt.Sprintf("%d replica(s) of %d nvidia.com/gpu each need more than the %d matching Ready node(s) offer (%d GPUs in total, room for %d replica(s); node selector %s); the workspace proceeds on its own when capacity is added",
		replicas, c.GPUsPerReplica, c.MatchingNodes, c.TotalGPUs, c.PlaceableReplicas, c.Selector)
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

func renderSelector(sel map[string]string) string {
	if len(sel) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(sel))
	for k, v := range sel {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
