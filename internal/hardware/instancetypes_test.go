package hardware

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The catalog's entries are well-formed: unique names, a known cloud, GPUs, a product that is
// a label value, a GPU memory quantity.
func TestInstanceTypes_wellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, it := range InstanceTypes() {
		if seen[it.Name] {
			t.Errorf("%s twice", it.Name)
		}
		seen[it.Name] = true
		if it.Cloud != "azure" && it.Cloud != "aws" && it.Cloud != "gcp" {
			t.Errorf("%s: cloud %q", it.Name, it.Cloud)
		}
		if it.GPUCount < 1 || it.GPUProduct == "" || strings.Contains(it.GPUProduct, " ") {
			t.Errorf("%s: %d × %q", it.Name, it.GPUCount, it.GPUProduct)
		}
		q, err := resource.ParseQuantity(it.GPUMemory)
		if err != nil || q.Value() < 8<<30 {
			t.Errorf("%s: gpuMemory %q: %v", it.Name, it.GPUMemory, err)
		}
	}
}

// The H200 instance types (shared/reference/gpu-facts.md and the clouds' documentation): 8 ×
// NVIDIA-H200 (GPU feature discovery's product label) of 143771 MiB each (NVML's memory.total).
func TestInstanceTypes_H200(t *testing.T) {
	for name, cloud := range map[string]string{"p5e.48xlarge": "aws", "p5en.48xlarge": "aws", "Standard_ND96isr_H200_v5": "azure", "a3-ultragpu-8g": "gcp"} {
		it, ok := LookupInstanceType(name)
		if !ok {
			t.Errorf("%s: not in the catalog", name)
			continue
		}
		want := InstanceType{Name: name, Cloud: cloud, GPUCount: 8, GPUProduct: "NVIDIA-H200", GPUMemory: "143771Mi"}
		if it != want {
			t.Errorf("%s: %+v, want %+v", name, it, want)
		}
	}
	if err := UnknownInstanceTypeError("p5e.48xlarg"); !strings.Contains(err.Error(), "did you mean p5e.48xlarge") {
		t.Errorf("a near miss of p5e.48xlarge: %v", err)
	}
}
