package packageset

// Hand-over from Skyhook (NVIDIA Skyhook / NodeWright): a PackageSet annotated
// gantry.dev/adopt-from-skyhook=<skyhook> takes over the nodes a Skyhook already brought to
// its packages, so no package runs again on a node that already has it. The facts are the
// node's Skyhook state annotation (skyhook.nvidia.com/nodeState_<skyhook>, parsed by
// ParseSkyhookNodeState in NodeReader.Read); the decision is AdoptSkyhook (called by the node
// pass before anything else); the act is the usual write of the node record.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// SkyhookPackageStatus is one entry of Skyhook's per-node state (Skyhook's
// v1alpha1.PackageStatus): a package at a version, the stage it is at and that stage's state.
type SkyhookPackageStatus struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Image is the package image without its tag (Skyhook strips it; the version is the tag).
	Image        string `json:"image"`
	ContainerSHA string `json:"containerSHA,omitempty"`
	Stage        string `json:"stage"`
	State        string `json:"state"`
	Restarts     int32  `json:"restarts,omitempty"`
}

// SkyhookNodeState is Skyhook's per-node state: "<package>|<version>" → status.
type SkyhookNodeState map[string]SkyhookPackageStatus

// ParseSkyhookNodeState parses the value of a skyhook.nvidia.com/nodeState_<skyhook>
// annotation. Error: it is not Skyhook's node state JSON.
func ParseSkyhookNodeState(raw string) (SkyhookNodeState, error) {
	st := SkyhookNodeState{}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return nil, err
	}
	return st, nil
}

// AdoptSkyhook records in rec, as finished flows, the wanted packages rec has no record of that
// Skyhook completed on the node at the same version (and image repository, when named), as
// Skyhook's IsPackageComplete judges it, so the node's pass runs no stage for them. Gantry's own
// records always win. adopted names the recorded "<package>@<version>"; skipped says why each
// other package runs under Gantry. Both sorted.
func AdoptSkyhook(rec *NodeRecord, wants []Want, sky SkyhookNodeState, now time.Time) (adopted, skipped []string) {
	if len(sky) == 0 {
		return nil, nil
	}
	if rec.Packages == nil {
		rec.Packages = map[string]*PackageRecord{}
	}
	for i := range wants {
		w := &wants[i]
		if rec.Packages[w.Name] != nil {
			continue
		}
		st, found := skyhookEntry(sky, w)
		if !found {
			if other := skyhookVersions(sky, w.Name); other != "" {
				skipped = append(skipped, fmt.Sprintf("%s: Skyhook has %s, the set asks for %s", w.Name, other, w.Version))
			}
			continue
		}
		if why := skyhookIncomplete(st, w); why != "" {
			skipped = append(skipped, fmt.Sprintf("%s@%s: %s", w.Name, w.Version, why))
			continue
		}
		stage := v1alpha1.StageConfig
		if w.Interrupt != nil {
			stage = v1alpha1.StagePostInterrupt
		}
		rec.Packages[w.Name] = &PackageRecord{Version: w.Version, Image: w.Image, Stage: stage, State: v1alpha1.StateComplete,
			Since: now, Config: w.Config, Interrupt: w.Interrupt, Uninstall: w.Uninstall, Done: true, Spec: w.Spec}
		adopted = append(adopted, w.Name+"@"+w.Version)
	}
	sort.Strings(adopted)
	sort.Strings(skipped)
	return adopted, skipped
}

// skyhookEntry is Skyhook's status of w's package at w's version.
func skyhookEntry(sky SkyhookNodeState, w *Want) (SkyhookPackageStatus, bool) {
	if st, ok := sky[w.Name+"|"+w.Version]; ok && st.Name == w.Name && st.Version == w.Version {
		return st, true
	}
	for _, st := range sky {
		if st.Name == w.Name && st.Version == w.Version {
			return st, true
		}
	}
	return SkyhookPackageStatus{}, false
}

// skyhookVersions lists the versions Skyhook's state has of package name, "" if none.
func skyhookVersions(sky SkyhookNodeState, name string) string {
	var vs []string
	for _, st := range sky {
		if st.Name == name {
			vs = append(vs, st.Version)
		}
	}
	sort.Strings(vs)
	return strings.Join(vs, ", ")
}

// skyhookIncomplete says why Skyhook's status st does not count as w done ("" when it does).
func skyhookIncomplete(st SkyhookPackageStatus, w *Want) string {
	if st.State != string(v1alpha1.StateComplete) {
		return fmt.Sprintf("Skyhook's stage %s is %s, not complete", st.Stage, st.State)
	}
	switch {
	case st.Stage == string(v1alpha1.StagePostInterrupt):
	case st.Stage == string(v1alpha1.StageConfig) && w.Interrupt == nil:
	default:
		return fmt.Sprintf("Skyhook completed stage %s, not the package's last stage", st.Stage)
	}
	if st.Image != "" && imageRepository(st.Image) != imageRepository(w.Image) {
		return fmt.Sprintf("Skyhook ran image %s, the set runs %s", st.Image, imageRepository(w.Image))
	}
	return ""
}

// imageRepository is an image reference without its tag or digest.
func imageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if tag := WrittenTag(image); tag != "" {
		image = strings.TrimSuffix(image, ":"+tag)
	}
	return image
}
