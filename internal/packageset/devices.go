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

// DeviceSettle is how long a node that had device resources stays cordoned after its work is
// done before its allocatable is trusted: the kubelet reports a device plugin's loss in the
// node's status only at its next status update (nodeStatusUpdateFrequency, 10 s by default), so
// a node read at once would still show the GPUs an interrupt just took away (the real node's
// first run uncordoned with 0 of 2 GPUs allocatable that way). The interrupt ended before the
// post-interrupt stage ran, so 10 s after the work is done covers one status update.
const DeviceSettle = 10 * time.Second

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
		p.rec.DevicesBefore, p.rec.DevicesCheckAt = maps.Clone(p.n.Allocatable), nil
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
// deleted set never waits) or when it had no device resources at the cordon; else it is held
// DeviceSettle (NodeRecord.DevicesCheckAt), then until its recorded devices are back, and the
// record forgets them. While held, the node stays cordoned and in progress, says what it waits
// for (NodePlan.DevicesWait) and is looked at again within DevicePoll.
func (p *nodePass) releaseCordon() {
	if p.plan.Record == nil || len(p.rec.DevicesBefore) == 0 {
		p.rec.DevicesBefore, p.rec.DevicesCheckAt = nil, nil
		p.plan.Uncordon = true
		return
	}
	now := p.f.Now
	if p.rec.DevicesCheckAt == nil {
		at := now.Add(DeviceSettle)
		p.rec.DevicesCheckAt = &at
	}
	if now.Before(*p.rec.DevicesCheckAt) {
		p.plan.DevicesWait = fmt.Sprintf("waiting %s for the kubelet to report the node's devices", p.rec.DevicesCheckAt.Sub(now).Round(time.Second))
		p.requeueIn(min(DevicePoll, p.rec.DevicesCheckAt.Sub(now)))
		return
	}
	if wait := p.devicesMissing(); wait != "" {
		p.plan.DevicesWait = wait
		p.requeueIn(DevicePoll)
		return
	}
	p.rec.DevicesBefore, p.rec.DevicesCheckAt = nil, nil
	p.plan.Uncordon = true
}
