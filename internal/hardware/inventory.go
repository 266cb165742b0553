package hardware

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LabelInstanceType is the well-known node label of the cloud instance type.
const LabelInstanceType = corev1.LabelInstanceTypeStable

// NodeInventory is what a node offers GPU and TEE workloads (the gantry_nodes data source).
type NodeInventory struct {
	// Name is the node's name.
	Name string
	// GPUProduct is the value of nvidia.com/gpu.product ("" when absent).
	GPUProduct string
	// GPUCapacity and GPUAllocatable are the node's nvidia.com/gpu capacity and allocatable,
	// in devices; GPUInUse is the sum of the nvidia.com/gpu requests of the pods bound to it
	// that have not terminated (phase not Succeeded or Failed).
	GPUCapacity, GPUAllocatable, GPUInUse int64
	// TEETypes are the TEE types the node's node-feature-discovery labels say it supports,
	// spelled as the Performer's hardware.teeType ("sev-snp", "tdx", "sgx"), sorted.
	TEETypes []string
	// RuntimeClasses are the RuntimeClasses whose scheduling.nodeSelector the node's labels
	// match (a RuntimeClass without scheduling matches every node), sorted.
	RuntimeClasses []string
	// Taints are the node's taints.
	Taints []corev1.Taint
	// Ready is the node's Ready condition being True.
	Ready bool
	// InstanceType is node.kubernetes.io/instance-type ("" when absent).
	InstanceType string
	// Labels are the node's labels.
	Labels map[string]string
}

// GPUsInUse is, per node name, the nvidia.com/gpu devices requested by the containers of the
// pods bound to it that have not terminated (phase not Succeeded or Failed), as the scheduler
// counts them; pods for which skip returns true (skip may be nil) are left out, e.g. a
// workspace's own pods when asking whether it could be placed.
func GPUsInUse(pods []corev1.Pod, skip func(*corev1.Pod) bool) map[string]int64 {
	return ResourceInUse(pods, ResourceGPU, skip)
}

// ResourceInUse is GPUsInUse for any extended resource, e.g. a MIG profile's
// nvidia.com/mig-1g.10gb.
func ResourceInUse(pods []corev1.Pod, name corev1.ResourceName, skip func(*corev1.Pod) bool) map[string]int64 {
	inUse := map[string]int64{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || skip != nil && skip(p) {
			continue
		}
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Requests[name]; ok {
				inUse[p.Spec.NodeName] += q.Value()
			}
		}
	}
	return inUse
}

// GPUFree is the number of nvidia.com/gpu devices not requested yet (never below 0).
func (n NodeInventory) GPUFree() int64 {
	if f := n.GPUAllocatable - n.GPUInUse; f > 0 {
		return f
	}
	return 0
}

// Inventory returns the inventory of nodes, sorted by name: GPU counts from the nodes and the
// requests of pods (pods of other nodes, unbound or terminated pods are ignored), TEE types
// from node labels, usable RuntimeClasses from runtimeClasses.
func Inventory(nodes []corev1.Node, pods []corev1.Pod, runtimeClasses []nodev1.RuntimeClass) []NodeInventory {
	inUse := GPUsInUse(pods, nil)
	out := make([]NodeInventory, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		inv := NodeInventory{
			Name: n.Name, GPUProduct: n.Labels[LabelGPUProduct], GPUInUse: inUse[n.Name],
			Taints: n.Spec.Taints, InstanceType: n.Labels[LabelInstanceType], Labels: n.Labels,
		}
		if q, ok := n.Status.Capacity[ResourceGPU]; ok {
			inv.GPUCapacity = q.Value()
		}
		if q, ok := n.Status.Allocatable[ResourceGPU]; ok {
			inv.GPUAllocatable = q.Value()
		}
		for tee, l := range teeLabels {
			if n.Labels[l.label] == "true" {
				inv.TEETypes = append(inv.TEETypes, string(tee))
			}
		}
		sort.Strings(inv.TEETypes)
		for j := range runtimeClasses {
			rc := &runtimeClasses[j]
			if rc.Scheduling == nil || labels.SelectorFromSet(rc.Scheduling.NodeSelector).Matches(labels.Set(n.Labels)) {
				inv.RuntimeClasses = append(inv.RuntimeClasses, rc.Name)
			}
		}
		sort.Strings(inv.RuntimeClasses)
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				inv.Ready = true
			}
		}
		out = append(out, inv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NodeFilter selects nodes of an inventory; zero fields select everything.
type NodeFilter struct {
	// GPUProduct, when set, is the nvidia.com/gpu.product the node must have.
	GPUProduct string
	// TEEType, when set, is a TEE type the node must support ("sev-snp", "tdx", "sgx").
	TEEType string
	// RuntimeClass, when set, must be usable on the node.
	RuntimeClass string
	// InstanceType, when set, is the node.kubernetes.io/instance-type the node must have.
	InstanceType string
	// MinFreeGPUs is the number of free nvidia.com/gpu devices the node must have.
	MinFreeGPUs int64
	// ReadyOnly keeps only Ready nodes.
	ReadyOnly bool
	// Labels must all be on the node with these values.
	Labels map[string]string
}

// Match reports whether n passes every set criterion of f.
func (f NodeFilter) Match(n NodeInventory) bool {
	switch {
	case f.GPUProduct != "" && n.GPUProduct != f.GPUProduct,
		f.TEEType != "" && !slices.Contains(n.TEETypes, f.TEEType),
		f.RuntimeClass != "" && !slices.Contains(n.RuntimeClasses, f.RuntimeClass),
		f.InstanceType != "" && n.InstanceType != f.InstanceType,
		n.GPUFree() < f.MinFreeGPUs,
		f.ReadyOnly && !n.Ready:
		return false
	}
	for k, v := range f.Labels {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

// String describes the filter as criteria, e.g. `gpu_product = "NVIDIA-H100", min_free_gpus
// = 4`; "no filter" when empty.
func (f NodeFilter) String() string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, fmt.Sprintf("%s = %q", name, v))
		}
	}
	add("gpu_product", f.GPUProduct)
	add("tee_type", f.TEEType)
	add("runtime_class", f.RuntimeClass)
	add("instance_type", f.InstanceType)
	if f.MinFreeGPUs > 0 {
		parts = append(parts, fmt.Sprintf("min_free_gpus = %d", f.MinFreeGPUs))
	}
	if f.ReadyOnly {
		parts = append(parts, "ready_only = true")
	}
	keys := make([]string, 0, len(f.Labels))
	for k := range f.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("labels[%q] = %q", k, f.Labels[k]))
	}
	if len(parts) == 0 {
		return "no filter"
	}
	return strings.Join(parts, ", ")
}

// Shortfall explains why fewer than want nodes of inv match f: what was asked, how many
// matched, and the nodes closest to matching — those with the asked GPU product (with their
// free GPUs), else every GPU node's product and free GPUs — so a module can fail early with a
// message naming what the cluster has. "" when at least want nodes match.
func (f NodeFilter) Shortfall(inv []NodeInventory, want int) string {
	var matched int
	for _, n := range inv {
		if f.Match(n) {
			matched++
		}
	}
	if matched >= want {
		return ""
	}
	var near []string
	for _, n := range inv {
		if n.GPUAllocatable == 0 || (f.GPUProduct != "" && n.GPUProduct != f.GPUProduct) {
			continue
		}
		s := fmt.Sprintf("%s (%s, %d of %d GPUs free", n.Name, orNone(n.GPUProduct), n.GPUFree(), n.GPUAllocatable)
		if !n.Ready {
			s += ", not Ready"
		}
		near = append(near, s+")")
	}
	msg := fmt.Sprintf("%d node(s) match %s, %d needed (min_nodes); the cluster has %d node(s)", matched, f, want, len(inv))
	switch {
	case len(near) > 0 && f.GPUProduct != "":
		msg += "; nodes with GPU product " + f.GPUProduct + ": " + strings.Join(near, ", ")
	case len(near) > 0:
		msg += "; GPU nodes: " + strings.Join(near, ", ")
	case f.GPUProduct != "":
		msg += "; no node has GPU product " + f.GPUProduct
	default:
		msg += "; none has a GPU"
	}
	return msg
}

func orNone(s string) string {
	if s == "" {
		return "no product label"
	}
	return s
}

// TEETypeNames are the TEE types NodeFilter.TEEType accepts.
func TEETypeNames() []string {
	out := make([]string, 0, len(teeLabels))
	for t := range teeLabels {
		out = append(out, string(t))
	}
	sort.Strings(out)
	return out
}
