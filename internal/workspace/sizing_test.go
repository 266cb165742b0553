package workspace

import (
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// SizingOf reads a resolved workspace as the machine does: pods per node from the instance
// type, KAITO's multi-node group as one replica over nodes, and the NodeClaims the machine
// would create on an empty cluster (none without provisioning).
func TestSizingOf(t *testing.T) {
	off := false
	cases := []struct {
		name string
		spec v1alpha1.WorkspaceSpec
		want Sizing
	}{
		{"one-GPU preset, four to a 4-GPU node", v1alpha1.WorkspaceSpec{
			Resource:  v1alpha1.WorkspaceResource{Count: 5, InstanceType: "g5.12xlarge"},
			Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-7b-instruct"}},
			Sizing{Pods: 5, GPUsPerPod: 1, ModelGPUs: 1, ModelReplicas: 5, NodesPerModelReplica: 1, PodsPerNode: 4, Nodes: 2, NodeClaims: 2}},
		{"provisioning off: no claims", v1alpha1.WorkspaceSpec{
			Resource:  v1alpha1.WorkspaceResource{Count: 5, InstanceType: "g5.12xlarge", ProvisionNodes: &off},
			Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-7b-instruct"}},
			Sizing{Pods: 5, GPUsPerPod: 1, ModelGPUs: 1, ModelReplicas: 5, NodesPerModelReplica: 1, PodsPerNode: 4, Nodes: 2}},
		{"KAITO's multi-node deepseek-r1 on 6 nodes", v1alpha1.WorkspaceSpec{
			Resource:  v1alpha1.WorkspaceResource{Count: 6, InstanceType: "Standard_NC80adis_H100_v5"},
			Inference: &v1alpha1.WorkspaceInference{Preset: "deepseek-r1-0528"}},
			Sizing{Pods: 6, GPUsPerPod: 2, ModelGPUs: 12, MultiNode: true, ModelReplicas: 1, NodesPerModelReplica: 6, PodsPerNode: 1, Nodes: 6, NodeClaims: 6}},
		{"no instance type: a node per pod, no claims", v1alpha1.WorkspaceSpec{
			Resource:  v1alpha1.WorkspaceResource{Count: 3, GPUCount: 2},
			Inference: &v1alpha1.WorkspaceInference{Model: "m", Image: "i"}},
			Sizing{Pods: 3, GPUsPerPod: 2, ModelGPUs: 2, ModelReplicas: 3, NodesPerModelReplica: 1, PodsPerNode: 1, Nodes: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &v1alpha1.Workspace{Spec: tc.spec}
			w.Name, w.Namespace = "w", "ns"
			rw, err := Resolve(w)
			if err != nil {
				t.Fatal(err)
			}
			if got := SizingOf(rw); got != tc.want {
				t.Fatalf("SizingOf = %+v\nwant       %+v", got, tc.want)
			}
		})
	}
}
