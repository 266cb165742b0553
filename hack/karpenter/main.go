// Command karpenter writes the instance types of Gantry's catalog (internal/hardware,
// instancetypes.yaml) in the format of Karpenter's kwok cloud provider
// (INSTANCE_TYPES_FILE_PATH, sigs.k8s.io/karpenter/kwok/cloudprovider InstanceTypeOptions), so the
// local cluster's Karpenter turns a workspace's NodeClaims into kwok nodes of its instance type:
// node.kubernetes.io/instance-type, nvidia.com/gpu.product and nvidia.com/gpu allocatable as
// the catalog says, and nvidia.com/gpu.present=true (the labels GPU feature discovery puts on a
// real GPU node). CPU and memory are not in the catalog; each node gets 12 CPUs and 110Gi per
// GPU (at least 8 and 64Gi), enough for any workspace's pods. Usage: go run ./hack/karpenter > FILE
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

type requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

type offering struct {
	Price        float64       `json:"Price"`
	Available    bool          `json:"Available"`
	Requirements []requirement `json:"Requirements"`
}

type instanceType struct {
	Name             string            `json:"name"`
	Offerings        []offering        `json:"offerings"`
	Architecture     string            `json:"architecture"`
	OperatingSystems []string          `json:"operatingSystems"`
	Resources        map[string]string `json:"resources"`
}

func main() {
	var out []instanceType
	for _, it := range hardware.InstanceTypes() {
		gpus := int(it.GPUCount)
		out = append(out, instanceType{
			Name: it.Name, Architecture: "amd64", OperatingSystems: []string{"linux"},
			Resources: map[string]string{
				"cpu":                        fmt.Sprint(max(8, 12*gpus)),
				"memory":                     fmt.Sprintf("%dGi", max(64, 110*gpus)),
				"pods":                       "110",
				string(hardware.ResourceGPU): fmt.Sprint(gpus),
			},
			Offerings: []offering{{Price: float64(gpus), Available: true, Requirements: []requirement{
				{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}},
				{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{"test-zone-a"}},
				{Key: hardware.LabelGPUProduct, Operator: "In", Values: []string{it.GPUProduct}},
				{Key: hardware.LabelGPUPresent, Operator: "In", Values: []string{"true"}},
			}}},
		})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
