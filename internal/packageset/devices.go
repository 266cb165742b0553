package packageset

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DevicePoll is how often a node waiting for its devices after an interrupt is looked at again
// (a device plugin's re-registration changes only the node's status, which the set does not
// watch).
const DevicePoll = 5 * time.Second

// ExtendedAllocatable is node's status.allocatable of device plugin resources (names with a
// vendor domain, such as nvidia.com/gpu, nvidia.com/mig-1g.18gb, amd.com/gpu; not cpu, memory,
// pods, ephemeral-storage or hugepages-*), as whole numbers; nil when it has none.
func ExtendedAllocatable(node *corev1.Node) map[string]int64 {
	var out map[string]int64
	for name, q := range node.Status.Allocatable {
		n := string(name)
		if !strings.Contains(n, "/") || strings.HasPrefix(n, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(n, "kubernetes.io/") {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[n] = q.Value()
	}
	return out
}

// recordDevices keeps, in the pass that takes the node's cordon, the node's device plugin
// resources (NodeRecord.DevicesBefore): what must be allocatable again before the cordon is
// released. A cordon already held keeps what it recorded; each new cordon records afresh.
func (p *nodePass) recordDevices() {
	if p.plan.Cordon && !p.n.Cordoned {
		p.rec.DevicesBefore = maps.Clone(p.n.Allocatable)
	}
}

// devicesMissing is "" when every device resource recorded at the cordon is allocatable again
// in the same number, else what is missing ("nvidia.com/gpu 0 of 2 allocatable, ..."): an
// interrupt that restarted a driver or its device plugin takes a node's GPUs away until the
// plugin registers them again, and the node must not take work before (Skyhook leaves this to
// the GPU operator's validator; Gantry holds the cordon).
func (p *nodePass) devicesMissing() string {
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(p.rec.DevicesBefore)) {
		if want, got := p.rec.DevicesBefore[name], p.n.Allocatable[name]; got < want {
			missing = append(missing, fmt.Sprintf("%s %d of %d allocatable", name, got, want))
		}
	}
	return strings.Join(missing, ", ")
}

// releaseCordon decides the cordon's release once nothing on the node needs it (no record left,
// or no interrupt pending): released at once when the node's record goes (a removed node or a
// deleted set never waits), else only when its recorded devices are back, and the record
// forgets them; while they are not, the node stays cordoned and in progress, says what it
// waits for (NodePlan.DevicesWait) and is looked at again within DevicePoll.
func (p *nodePass) releaseCordon() {
	if p.plan.Record == nil {
		p.plan.Uncordon = true
		return
	}
	if wait := p.devicesMissing(); wait != "" {
		p.plan.DevicesWait = wait
		p.requeueIn(DevicePoll)
		return
	}
	p.rec.DevicesBefore = nil
	p.plan.Uncordon = true
}
