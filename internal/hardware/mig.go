package hardware

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// MIGUserGuide is the source of the MIG profile table: the "Supported MIG Profiles" page of
// NVIDIA's Multi-Instance GPU user guide.
const MIGUserGuide = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"

// MIGResourcePrefix starts the extended resource the NVIDIA device plugin advertises for a MIG
// profile under the GPU operator's "mixed" strategy: nvidia.com/mig-<profile>, e.g.
// nvidia.com/mig-1g.10gb.
const MIGResourcePrefix = "nvidia.com/mig-"

// migMediaSuffix marks a profile with media extensions ("1g.10gb+me"). The device plugin
// advertises such a slice under its base profile's resource (nvidia.com/mig-1g.10gb).
const migMediaSuffix = "+me"

// The profile lists of NVIDIA's MIG user guide (MIGUserGuide), one per GPU: the names are
// <compute slices>g.<memory>gb, in the guide's order.
var (
	migA100x40GB = []string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}
	migA100x80GB = []string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}
	migH100x80GB = migA100x80GB // H100 80GB (SXM5 and PCIe, HBM3): the A100 80GB's names
	migH100x94GB = []string{"1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"}
	migH200      = []string{"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}
	migA30       = []string{"1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"}
)

// migProfiles maps a GPU product, as GPU feature discovery labels it (nvidia.com/gpu.product:
// NVML's name with spaces as '-'), to the MIG profiles NVIDIA's MIG user guide lists for it.
// An empty list is a GPU without MIG (MIG starts with compute capability 8.0, and not every
// such GPU has it: A10G, L4 and L40S do not). A product missing from the map is unknown.
var migProfiles = map[string][]string{
	"NVIDIA-A100-SXM4-40GB": migA100x40GB,
	"NVIDIA-A100-PCIE-40GB": migA100x40GB,
	"NVIDIA-A100-SXM4-80GB": migA100x80GB,
	"NVIDIA-A100-PCIE-80GB": migA100x80GB, // the catalog's spelling of the A100 80GB PCIe
	"NVIDIA-A100-80GB-PCIe": migA100x80GB, // NVML's ("NVIDIA A100 80GB PCIe")
	"NVIDIA-H100-80GB-HBM3": migH100x80GB,
	"NVIDIA-H100-PCIe":      migH100x80GB,
	"NVIDIA-H100-NVL":       migH100x94GB,
	"NVIDIA-H200":           migH200,
	"NVIDIA-A30":            migA30,

	"NVIDIA-A10G":          nil,
	"NVIDIA-L4":            nil,
	"NVIDIA-L40S":          nil,
	"Tesla-T4":             nil,
	"Tesla-V100-PCIE-16GB": nil,
	"Tesla-V100-SXM2-16GB": nil,
	"Tesla-V100-SXM2-32GB": nil,
}

// MIGProfiles returns the MIG profiles NVIDIA's MIG user guide (MIGUserGuide) lists for a GPU
// product (an nvidia.com/gpu.product label value, e.g. "NVIDIA-H200"), media-extension
// profiles ("1g.18gb+me") included, in the guide's order (a copy). known is false for a
// product the table lacks; a known GPU without MIG has known true and no profiles.
func MIGProfiles(product string) (profiles []string, known bool) {
	p, known := migProfiles[product]
	return slices.Clone(p), known
}

// MIGResourceProfiles are the profiles of a GPU product a pod can request, one
// nvidia.com/mig-<profile> resource each: MIGProfiles without the media-extension ones (the
// device plugin advertises those under their base profile). nil for an unknown product or a
// GPU without MIG.
func MIGResourceProfiles(product string) []string {
	var out []string
	for _, p := range migProfiles[product] {
		if !strings.HasSuffix(p, migMediaSuffix) {
			out = append(out, p)
		}
	}
	return out
}

// MIGProducts are the GPU products the MIG table knows (with MIG or without), sorted.
func MIGProducts() []string {
	out := make([]string, 0, len(migProfiles))
	for p := range migProfiles {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// MIGProfileOfResource returns the profile of a MIG extended resource
// ("nvidia.com/mig-3g.40gb" → "3g.40gb", true); false for any other resource.
func MIGProfileOfResource(resource string) (string, bool) {
	p, ok := strings.CutPrefix(resource, MIGResourcePrefix)
	return p, ok && p != ""
}

// MIGProfileError says that a MIG profile is not one the GPU product it must run on offers
// (NVIDIA's MIG user guide, MIGUserGuide).
type MIGProfileError struct {
	// Field is the spec path of the profile, e.g. "spec.resource.partition.profile".
	Field string
	// Profile is the profile asked for, e.g. "3g.40gb".
	Profile string
	// Product is the GPU product (nvidia.com/gpu.product), e.g. "NVIDIA-H200".
	Product string
	// Source says where Product comes from, e.g. "spec.resource.gpuProduct" or "the GPU of
	// spec.resource.instanceType p5e.48xlarge".
	Source string
	// Offered are the profiles Product offers that can be requested (MIGResourceProfiles);
	// empty for a GPU without MIG.
	Offered []string
}

func (e *MIGProfileError) Error() string {
	if len(e.Offered) == 0 {
		return fmt.Sprintf("%s: MIG profile %q cannot run on %s (%s): that GPU has no MIG (Multi-Instance GPU) support, "+
			"according to NVIDIA's MIG user guide; request whole GPUs, or choose a GPU with MIG (A30, A100, H100, H200)",
			e.Field, e.Profile, e.Product, e.Source)
	}
	return fmt.Sprintf("%s: MIG profile %q is not one %s (%s) offers; its profiles are %s (NVIDIA's MIG user guide)",
		e.Field, e.Profile, e.Product, e.Source, strings.Join(e.Offered, ", "))
}

// CheckMIGProfile is the rule "the MIG profile must be one the GPU offers": nil when product
// lists profile in the MIG table (MIGProfiles) or when the table does not know product (no table, no opinion);
// otherwise a *MIGProfileError naming field (the profile's spec path) and source (where the
// product comes from).
func CheckMIGProfile(field, profile, product, source string) error {
	offered, known := migProfiles[product]
	if !known || slices.Contains(offered, profile) {
		return nil
	}
	return &MIGProfileError{Field: field, Profile: profile, Product: product, Source: source, Offered: MIGResourceProfiles(product)}
}
