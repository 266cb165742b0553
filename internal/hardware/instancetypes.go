package hardware

import (
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// InstanceType is one cloud GPU instance type of the catalog (instancetypes.yaml).
type InstanceType struct {
	// Name is the node.kubernetes.io/instance-type value, e.g. "Standard_NC24ads_A100_v4".
	Name string `json:"name"`
	// Cloud is azure, aws or gcp.
	Cloud string `json:"cloud"`
	// GPUCount is the nvidia.com/gpu devices of one node of the type.
	GPUCount int32 `json:"gpuCount"`
	// GPUProduct is the GPU as GPU feature discovery labels it (nvidia.com/gpu.product).
	GPUProduct string `json:"gpuProduct"`
	// GPUMemory is one GPU's memory, a quantity ("80Gi").
	GPUMemory string `json:"gpuMemory"`
}

//go:embed instancetypes.yaml
var instanceTypesYAML []byte

var instanceTypes = func() []InstanceType {
	var doc struct {
		InstanceTypes []InstanceType `json:"instanceTypes"`
	}
	if err := yaml.UnmarshalStrict(instanceTypesYAML, &doc); err != nil {
		panic(fmt.Sprintf("hardware: instancetypes.yaml: %v", err))
	}
	return doc.InstanceTypes
}()

// InstanceTypes returns the catalog, in instancetypes.yaml's order (a copy).
func InstanceTypes() []InstanceType { return slices.Clone(instanceTypes) }

// LookupInstanceType returns the instance type named name (exact, case-sensitive as the node
// label is).
func LookupInstanceType(name string) (InstanceType, bool) {
	for _, t := range instanceTypes {
		if t.Name == name {
			return t, true
		}
	}
	return InstanceType{}, false
}

// UnknownInstanceTypeError says that name is not in the catalog, naming the closest ones
// (Closest) or, when none is close, every known name.
func UnknownInstanceTypeError(name string) error {
	names := make([]string, 0, len(instanceTypes))
	for _, t := range instanceTypes {
		names = append(names, t.Name)
	}
	if near := Closest(name, names, 3); len(near) > 0 {
		return fmt.Errorf("unknown GPU instance type %q; did you mean %s? (the known types are in the Instance types guide)", name, strings.Join(near, ", "))
	}
	sort.Strings(names)
	return fmt.Errorf("unknown GPU instance type %q; the known ones are: %s", name, strings.Join(names, ", "))
}

// Closest returns at most n of names closest to name by edit distance (case-insensitive
// Levenshtein), nearest first, leaving out those further than max(3, len(name)/3) edits.
func Closest(name string, names []string, n int) []string {
	l := strings.ToLower(name)
	d := map[string]int{}
	for _, c := range names {
		d[c] = distance(l, strings.ToLower(c))
	}
	sorted := slices.Clone(names)
	sort.SliceStable(sorted, func(i, j int) bool { return d[sorted[i]] < d[sorted[j]] })
	var out []string
	for _, c := range sorted {
		if len(out) < n && d[c] <= max(3, len(name)/3) {
			out = append(out, c)
		}
	}
	return out
}

// distance is the Levenshtein distance between a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// GPUProductMemory is the memory of one GPU of product (an nvidia.com/gpu.product value), in
// bytes, from the first instance type of the catalog with that GPU; false when none has it.
func GPUProductMemory(product string) (int64, bool) {
	for _, t := range instanceTypes {
		if t.GPUProduct == product && product != "" {
			if q, err := resource.ParseQuantity(t.GPUMemory); err == nil {
				return q.Value(), true
			}
		}
	}
	return 0, false
}
