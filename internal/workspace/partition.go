package workspace

import (
	"fmt"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// PartitionProfilePath is the spec path of a workspace's MIG profile.
const PartitionProfilePath = "spec.resource.partition.profile"

// CheckPartition is the rule "the MIG profile must be one the GPU offers" for a workspace with
// spec.resource.partition: its profile is checked (hardware.CheckMIGProfile, the table of
// NVIDIA's MIG user guide) against every GPU product the workspace names, in this order:
// spec.resource.gpuProduct, spec.resource.labelSelector["nvidia.com/gpu.product"], and the GPU
// of spec.resource.instanceType (from the instance type catalog). The first product that does
// not offer the profile gives a *hardware.MIGProfileError naming spec.resource.partition.profile,
// the product, where it comes from, and the profiles it offers. nil without a partition, and
// for products the table does not know or instance types the catalog does not know (Resolve
// reports those).
func CheckPartition(w *v1alpha1.Workspace) error {
	r := w.Spec.Resource
	if r.Partition == nil {
		return nil
	}
	type source struct{ product, what string }
	sources := []source{
		{r.GPUProduct, "spec.resource.gpuProduct"},
		{r.LabelSelector[hardware.LabelGPUProduct], fmt.Sprintf("spec.resource.labelSelector[%q]", hardware.LabelGPUProduct)},
	}
	if it, ok := hardware.LookupInstanceType(r.InstanceType); ok {
		sources = append(sources, source{it.GPUProduct, "the GPU of spec.resource.instanceType " + it.Name})
	}
	for _, s := range sources {
		if s.product == "" {
			continue
		}
		if err := hardware.CheckMIGProfile(PartitionProfilePath, r.Partition.Profile, s.product, s.what); err != nil {
			return err
		}
	}
	return nil
}
