package hardware

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// migProfileRe is a profile as NVIDIA's MIG user guide names it: <compute slices>g.<memory>gb,
// with +me for media extensions.
var migProfileRe = regexp.MustCompile(`^[1-7]g\.[0-9]+gb(\+me)?$`)

// The table's names are the guide's, every +me profile's base is offered too, and no GPU
// lists a profile twice.
func TestMIGTable_shape(t *testing.T) {
	for _, product := range MIGProducts() {
		profiles, known := MIGProfiles(product)
		if !known {
			t.Fatalf("%s: in MIGProducts but not known", product)
		}
		for i, p := range profiles {
			if !migProfileRe.MatchString(p) {
				t.Errorf("%s: profile %q is not <n>g.<m>gb[+me]", product, p)
			}
			if base, me := strings.CutSuffix(p, migMediaSuffix); me && !slices.Contains(profiles, base) {
				t.Errorf("%s: %s without its base profile %s", product, p, base)
			}
			if slices.Contains(profiles[:i], p) {
				t.Errorf("%s: %s twice", product, p)
			}
		}
		for _, p := range MIGResourceProfiles(product) {
			if strings.HasSuffix(p, migMediaSuffix) || !slices.Contains(profiles, p) {
				t.Errorf("%s: MIGResourceProfiles has %q", product, p)
			}
		}
	}
}

// The rows checked against NVIDIA's MIG user guide (supported MIG profiles) and, for the H200,
// against nvidia-smi mig -lgip on a real one (shared/reference/gpu-facts.md).
func TestMIGTable_rows(t *testing.T) {
	for product, want := range map[string]string{
		"NVIDIA-H200":           "1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb",
		"NVIDIA-A100-SXM4-40GB": "1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb",
		"NVIDIA-A100-PCIE-40GB": "1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb",
		"NVIDIA-A100-SXM4-80GB": "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb",
		"NVIDIA-A100-PCIE-80GB": "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb",
		"NVIDIA-H100-80GB-HBM3": "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb",
		"NVIDIA-H100-NVL":       "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb",
		"NVIDIA-A30":            "1g.6gb 1g.6gb+me 2g.12gb 2g.12gb+me 4g.24gb",
		"NVIDIA-L4":             "",
		"NVIDIA-A10G":           "",
		"Tesla-T4":              "",
	} {
		got, known := MIGProfiles(product)
		if !known || strings.Join(got, " ") != want {
			t.Errorf("MIGProfiles(%s) = %q, %v; want %q", product, got, known, want)
		}
	}
	if got := MIGResourceProfiles("NVIDIA-H200"); strings.Join(got, " ") != "1g.18gb 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb" {
		t.Errorf("MIGResourceProfiles(NVIDIA-H200) = %q", got)
	}
	// A copy: the caller cannot change the table.
	p, _ := MIGProfiles("NVIDIA-H200")
	p[0] = "x"
	if q, _ := MIGProfiles("NVIDIA-H200"); q[0] != "1g.18gb" {
		t.Error("MIGProfiles returned the table itself")
	}
}

// Every GPU of the instance type catalog is in the MIG table, so the rule has an opinion on
// every instance type.
func TestMIGTable_coversCatalog(t *testing.T) {
	for _, it := range InstanceTypes() {
		if _, known := MIGProfiles(it.GPUProduct); !known {
			t.Errorf("instance type %s: GPU %s is not in the MIG table", it.Name, it.GPUProduct)
		}
	}
}

// Every product's own profiles pass; a profile of another GPU fails with the offered list; a
// GPU without MIG refuses every profile; an unknown product has no table and no opinion.
func TestCheckMIGProfile(t *testing.T) {
	var all []string
	for _, product := range MIGProducts() {
		p, _ := MIGProfiles(product)
		all = append(all, p...)
	}
	const field, source = "spec.resource.partition.profile", "spec.resource.gpuProduct"
	for _, product := range MIGProducts() {
		own, _ := MIGProfiles(product)
		for _, p := range own {
			if err := CheckMIGProfile(field, p, product, source); err != nil {
				t.Errorf("%s %s: %v", product, p, err)
			}
		}
		for _, p := range all {
			if slices.Contains(own, p) {
				continue
			}
			err := CheckMIGProfile(field, p, product, source)
			var mig *MIGProfileError
			if !errors.As(err, &mig) {
				t.Fatalf("%s %s: %v, want a *MIGProfileError", product, p, err)
			}
			want := &MIGProfileError{Field: field, Profile: p, Product: product, Source: source, Offered: MIGResourceProfiles(product)}
			if mig.Error() != want.Error() || !slices.Equal(mig.Offered, want.Offered) {
				t.Errorf("%s %s: %v", product, p, err)
			}
			if len(own) > 0 && !strings.Contains(err.Error(), "its profiles are "+strings.Join(MIGResourceProfiles(product), ", ")) {
				t.Errorf("%s %s: the offered profiles are missing: %v", product, p, err)
			}
		}
	}
	for _, product := range []string{"NVIDIA-B200", "NVIDIA-H200-NVL", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", ""} {
		if err := CheckMIGProfile(field, "3g.40gb", product, source); err != nil {
			t.Errorf("unknown product %q: %v", product, err)
		}
	}
}

// The messages as a user reads them.
func TestMIGProfileError_text(t *testing.T) {
	err := CheckMIGProfile("spec.resource.partition.profile", "3g.40gb", "NVIDIA-H200", "spec.resource.gpuProduct")
	want := `spec.resource.partition.profile: MIG profile "3g.40gb" is not one NVIDIA-H200 (spec.resource.gpuProduct) offers; ` +
		`its profiles are 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (NVIDIA's MIG user guide)`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	err = CheckMIGProfile("spec.resource.partition.profile", "1g.10gb", "NVIDIA-L4", "the GPU of spec.resource.instanceType g6.xlarge")
	want = `spec.resource.partition.profile: MIG profile "1g.10gb" cannot run on NVIDIA-L4 (the GPU of spec.resource.instanceType g6.xlarge): ` +
		`that GPU has no MIG (Multi-Instance GPU) support, according to NVIDIA's MIG user guide; request whole GPUs, or choose a GPU with MIG (A30, A100, H100, H200)`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestMIGProfileOfResource(t *testing.T) {
	for in, want := range map[string]string{"nvidia.com/mig-3g.40gb": "3g.40gb", "nvidia.com/mig-1g.18gb": "1g.18gb"} {
		if got, ok := MIGProfileOfResource(in); !ok || got != want {
			t.Errorf("%s: %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"nvidia.com/gpu", "nvidia.com/mig-", "nvidia.com/a100", ""} {
		if got, ok := MIGProfileOfResource(in); ok {
			t.Errorf("%s: %q %v, want not a MIG resource", in, got, ok)
		}
	}
}

// A performer's MIG gpuResource with a gpuType: Place applies the rule, naming gpuResource and
// gpuType; PlaceAt with Paths lacking GPUResource (a kind that checks itself) does not.
func TestPlace_MIGProfile(t *testing.T) {
	hw := func(gpuType, res string) v1alpha1.HardwareRequirements {
		return v1alpha1.HardwareRequirements{GPUCount: 1, GPUType: gpuType, GPUResource: res}
	}
	_, err := Place(hw("NVIDIA-H200", "nvidia.com/mig-3g.40gb"), v1alpha1.Scheduling{})
	want := `spec.hardwareRequirements.gpuResource: MIG profile "3g.40gb" is not one NVIDIA-H200 (spec.hardwareRequirements.gpuType) offers; ` +
		`its profiles are 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (NVIDIA's MIG user guide)`
	var mig *MIGProfileError
	if !errors.As(err, &mig) || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	for _, ok := range []v1alpha1.HardwareRequirements{
		hw("NVIDIA-H200", "nvidia.com/mig-3g.71gb"),
		hw("NVIDIA-B200", "nvidia.com/mig-3g.40gb"), // not in the table
		hw("", "nvidia.com/mig-3g.40gb"),            // no GPU named
		hw("NVIDIA-H200", "nvidia.com/h200"),        // not a MIG resource
		hw("NVIDIA-H200", ""),
	} {
		pl, err := Place(ok, v1alpha1.Scheduling{})
		if err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
		if ok.GPUType != "" && pl.NodeSelector[LabelGPUProduct] != ok.GPUType {
			t.Errorf("%+v: node selector %v", ok, pl.NodeSelector)
		}
	}
	noMIGPath := PerformerPaths
	noMIGPath.GPUResource = ""
	if _, err := PlaceAt(hw("NVIDIA-H200", "nvidia.com/mig-3g.40gb"), v1alpha1.Scheduling{}, noMIGPath); err != nil {
		t.Errorf("PlaceAt without a GPUResource path: %v", err)
	}
}
