package workspace

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

func migWorkspace(r v1alpha1.WorkspaceResource, profile string) *v1alpha1.Workspace {
	r.Partition = &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: profile}
	return &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Resource: r, Inference: &v1alpha1.WorkspaceInference{Model: "m", Image: "i"}}}
}

var noProvisioning = func() *bool { b := false; return &b }()

// The MIG profile must be one the workspace's GPU offers, whichever field names the GPU; the
// error names spec.resource.partition.profile, the product, where it comes from, and its
// profiles. Unknown products and no partition are not checked.
func TestCheckPartition(t *testing.T) {
	h200 := "its profiles are 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (NVIDIA's MIG user guide)"
	cases := []struct {
		name    string
		w       *v1alpha1.Workspace
		wantErr string
	}{
		{"gpuProduct offers it", migWorkspace(v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-H200"}, "3g.71gb"), ""},
		{"gpuProduct does not offer it", migWorkspace(v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-H200"}, "3g.40gb"),
			`spec.resource.partition.profile: MIG profile "3g.40gb" is not one NVIDIA-H200 (spec.resource.gpuProduct) offers; ` + h200},
		{"a profile larger than the GPU", migWorkspace(v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-A100-SXM4-40GB"}, "7g.80gb"),
			`spec.resource.partition.profile: MIG profile "7g.80gb" is not one NVIDIA-A100-SXM4-40GB (spec.resource.gpuProduct) offers; its profiles are 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb (NVIDIA's MIG user guide)`},
		{"the instance type's GPU", migWorkspace(v1alpha1.WorkspaceResource{InstanceType: "p5e.48xlarge", ProvisionNodes: noProvisioning}, "1g.10gb"),
			`spec.resource.partition.profile: MIG profile "1g.10gb" is not one NVIDIA-H200 (the GPU of spec.resource.instanceType p5e.48xlarge) offers; ` + h200},
		{"the instance type's GPU offers it", migWorkspace(v1alpha1.WorkspaceResource{InstanceType: "a3-ultragpu-8g", ProvisionNodes: noProvisioning}, "1g.18gb"), ""},
		{"an instance type without MIG", migWorkspace(v1alpha1.WorkspaceResource{InstanceType: "g6.xlarge", ProvisionNodes: noProvisioning}, "1g.10gb"),
			`spec.resource.partition.profile: MIG profile "1g.10gb" cannot run on NVIDIA-L4 (the GPU of spec.resource.instanceType g6.xlarge): that GPU has no MIG`},
		{"the label selector's GPU", migWorkspace(v1alpha1.WorkspaceResource{LabelSelector: map[string]string{hardware.LabelGPUProduct: "NVIDIA-A30"}}, "3g.40gb"),
			`spec.resource.partition.profile: MIG profile "3g.40gb" is not one NVIDIA-A30 (spec.resource.labelSelector["nvidia.com/gpu.product"]) offers; its profiles are 1g.6gb, 2g.12gb, 4g.24gb`},
		{"gpuProduct fine, the instance type's GPU not", migWorkspace(v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-H200", InstanceType: "p4d.24xlarge", ProvisionNodes: noProvisioning}, "1g.18gb"),
			`(the GPU of spec.resource.instanceType p4d.24xlarge) offers`},
		{"unknown product: no opinion", migWorkspace(v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-B200"}, "1g.23gb"), ""},
		{"no product named: no opinion", migWorkspace(v1alpha1.WorkspaceResource{}, "3g.40gb"), ""},
		{"no partition", &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-L4", GPUCount: 1}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for what, err := range map[string]error{"CheckPartition": CheckPartition(tc.w), "Resolve": second(Resolve(tc.w))} {
				switch {
				case tc.wantErr == "" && err != nil:
					t.Errorf("%s: %v", what, err)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
					t.Errorf("%s: got %v\nwant %s", what, err, tc.wantErr)
				case tc.wantErr != "" && !errors.As(err, new(*hardware.MIGProfileError)):
					t.Errorf("%s: %T, want a *hardware.MIGProfileError", what, err)
				}
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

// Every instance type of the catalog with each profile its GPU offers resolves; each profile
// its GPU lacks is refused.
func TestCheckPartition_wholeCatalog(t *testing.T) {
	for _, it := range hardware.InstanceTypes() {
		offered := hardware.MIGResourceProfiles(it.GPUProduct)
		for _, p := range MIGProfiles { // KAITO's list: every profile a partition may name
			w := migWorkspace(v1alpha1.WorkspaceResource{InstanceType: it.Name, ProvisionNodes: noProvisioning}, p)
			_, err := Resolve(w)
			if slices.Contains(offered, p) != (err == nil) {
				t.Errorf("%s (%s) with %s: %v (offers %v)", it.Name, it.GPUProduct, p, err, offered)
			}
		}
	}
}

// Every profile of the MIG table a pod can request is one KAITO knows (MIGProfiles), so the
// plan-time check of the profile's name never refuses what the GPU offers.
func TestMIGTable_inKAITOsList(t *testing.T) {
	for _, product := range hardware.MIGProducts() {
		for _, p := range hardware.MIGResourceProfiles(product) {
			if !slices.Contains(MIGProfiles, p) {
				t.Errorf("%s: %s is not in MIGProfiles", product, p)
			}
		}
	}
}

// A Workspace applied with kubectl with a profile its GPU lacks is Stalled, InvalidSpec, with
// the message naming the field (the reconciler puts Resolve's error in Facts.SpecError).
func TestCheckPartition_stallsInvalidSpec(t *testing.T) {
	_, err := Resolve(migWorkspace(v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-H200"}, "3g.40gb"))
	if err == nil {
		t.Fatal("no error")
	}
	d, derr := Decide(infFacts(sPending, func(f *Facts) { f.SpecError = err.Error() }))
	if derr != nil {
		t.Fatal(derr)
	}
	c := condOf(d, v1alpha1.ConditionStalled)
	if c.Status != "True" || c.Reason != ReasonInvalidSpec || !strings.Contains(c.Message, "spec.resource.partition.profile: MIG profile \"3g.40gb\" is not one NVIDIA-H200") {
		t.Errorf("Stalled: %+v", c)
	}
}
