package packageset

// Facts, records and decisions of the package lifecycle machine: what Plan reads and returns.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Want is one package as the spec asks for it.
type Want struct {
	Name, Version, Image string
	// Config is config key → hash of its value (ConfigHashes).
	Config           map[string]string
	Interrupt        *v1alpha1.Interrupt
	ConfigInterrupts map[string]v1alpha1.Interrupt
	DependsOn        []string
	Uninstall        bool
	StageTimeout     time.Duration
	// ReapplyOnReboot: the package runs again on a node that rebooted outside this set's
	// reboot interrupts (spec.packages[].reapplyOnReboot; regate.go).
	ReapplyOnReboot bool
	// Spec is the package's API spec as JSON (env, config values, pod labels, ...), kept in the
	// node records so a rollback or a removed package's uninstall runs with the spec of the
	// version it runs, not the current one (Skyhook #186). Opaque to the machine.
	Spec []byte
}

// WantOf maps an API package to a Want.
func WantOf(p v1alpha1.Package) Want {
	w := Want{Name: p.Name, Version: p.Version, Image: ImageOf(p), Config: ConfigHashes(p.Config), Interrupt: p.Interrupt,
		ConfigInterrupts: p.ConfigInterrupts, Uninstall: p.Uninstall != nil && p.Uninstall.Enabled, StageTimeout: DefaultStageTimeout,
		ReapplyOnReboot: p.ReapplyOnReboot}
	for d := range p.DependsOn {
		w.DependsOn = append(w.DependsOn, d)
	}
	w.Spec, _ = json.Marshal(p) // a plain struct: cannot fail
	sort.Strings(w.DependsOn)
	if p.StageTimeout != nil && p.StageTimeout.Duration > 0 {
		w.StageTimeout = p.StageTimeout.Duration
	}
	return w
}

// WantsOf are the packages a set asks nodes to have, in spec order (WantOf each): every
// package except those whose uninstall.apply is set (Skyhook's explicit uninstall), which
// the machine then treats as removed from the set.
func WantsOf(pkgs []v1alpha1.Package) []Want {
	var out []Want
	for _, p := range pkgs {
		if p.Uninstall != nil && p.Uninstall.Enabled && p.Uninstall.Apply {
			continue
		}
		out = append(out, WantOf(p))
	}
	return out
}

// ImageOf is the image a package's stages run, as Skyhook's operator runs it: the spec image
// with the version as its tag (Skyhook's image:version), e.g. "ghcr.io/acme/tuned" at 1.2 →
// "ghcr.io/acme/tuned:1.2". A tag written in the image is replaced by the version, as Skyhook
// drops it ("ghcr.io/acme/tuned:6.0" at 1.2 → "ghcr.io/acme/tuned:1.2"; the provider warns at
// plan when they differ: WrittenTag); a digest is kept as written (Skyhook's containerSHA).
// A registry port ("localhost:5000/tuned") is not a tag. OCI tags cannot contain '+', so
// semver build metadata is written with '_' instead, as Helm and other OCI tooling do:
// 1.2.3+build.5 → "ghcr.io/acme/tuned:1.2.3_build.5" (the version itself is kept as written).
func ImageOf(p v1alpha1.Package) string {
	img := p.Image
	if strings.Contains(img, "@") || p.Version == "" {
		return img
	}
	if tag := WrittenTag(img); tag != "" {
		img = strings.TrimSuffix(img, ":"+tag)
	}
	return img + ":" + strings.ReplaceAll(p.Version, "+", "_")
}

// WrittenTag is the tag written in an image reference ("6.0" of "ghcr.io/acme/tuned:6.0"), ""
// when it has none (a registry port is not a tag) or has a digest.
func WrittenTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	return ""
}

// ConfigHashes maps each config key to a short hash of its value (what node records keep).
func ConfigHashes(c map[string]string) map[string]string {
	if len(c) == 0 {
		return nil
	}
	out := make(map[string]string, len(c))
	for k, v := range c {
		out[k] = shortHash(v)[:8]
	}
	return out
}

// Order sorts packages so each comes after the ones it depends on, ties in the user's order.
// Errors: a dependency cycle (named) or an unknown dependency.
func Order(pkgs []Want) ([]Want, error) {
	idx := map[string]int{}
	for i, p := range pkgs {
		idx[p.Name] = i
	}
	state := make([]int, len(pkgs)) // 0 new, 1 visiting, 2 done
	var out []Want
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("spec.packages[].dependsOn form a cycle, %s: each package would wait for the next for ever; remove one of the dependencies", strings.Join(append(path, pkgs[i].Name), " → "))
		case 2:
			return nil
		}
		state[i] = 1
		for _, d := range pkgs[i].DependsOn {
			j, ok := idx[d]
			if !ok {
				return fmt.Errorf("package %s depends on unknown package %s", pkgs[i].Name, d)
			}
			if err := visit(j, append(path, pkgs[i].Name)); err != nil {
				return err
			}
		}
		state[i] = 2
		out = append(out, pkgs[i])
		return nil
	}
	for i := range pkgs {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PackageRecord is one package's state on one node, kept in the node's
// gantry.dev/state_<set> annotation.
type PackageRecord struct {
	Version  string `json:"version"`
	Image    string `json:"image,omitempty"`
	Stage    Stage  `json:"stage,omitempty"`
	State    State  `json:"state,omitempty"`
	Restarts int32  `json:"restarts,omitempty"`
	Message  string `json:"message,omitempty"`
	// Since is when State began (backoff).
	Since time.Time `json:"since"`
	// Config is the config hashes the current flow applies.
	Config map[string]string `json:"config,omitempty"`
	// Interrupt is the interrupt of the current flow; nil: the flow has none.
	Interrupt *v1alpha1.Interrupt `json:"interrupt,omitempty"`
	// Uninstall: the package was applied with uninstall enabled.
	Uninstall bool `json:"uninstall,omitempty"`
	// Removing: the flow uninstalls a package no longer wanted; the record goes when it is done.
	Removing bool `json:"removing,omitempty"`
	// Done: the flow's last stage is complete.
	Done bool `json:"done,omitempty"`
	// Flow numbers the flow (pod names include it, so a re-run flow never reuses a Pod).
	Flow int `json:"flow"`
	// Prev is what the package was before this flow (what a rollback returns to): the previous
	// version for a version change, the same version with its previous config (and spec) for a
	// config-only change; nil for a new package (New) and for a removal.
	Prev *Applied `json:"prev,omitempty"`
	// New: this flow installs a package the node did not have (Skyhook's apply flow with no
	// previous version). A rollback of it uninstalls it (uninstall enabled) and drops the record
	// (NodeRecord.Withdrawn).
	New bool `json:"new,omitempty"`
	// Reverting: this flow rolls the package back after the change to RevertedFrom failed (policy
	// rollback; revert): uninstall of RevertedFrom (uninstall enabled) then apply of Prev for a
	// version change; the previous config for a config change (RevertedConfig set); a re-apply
	// of the installed version after the uninstall of a downgrade to RevertedFrom failed. It
	// stays set once the flow is done (the node is Reverted) until a new flow starts.
	Reverting    bool   `json:"reverting,omitempty"`
	RevertedFrom string `json:"revertedFrom,omitempty"`
	// Cause is what failed and made this flow a rollback (the failed stage's, soak check's or
	// health check's message, at most MaxCause bytes); revertedMessage names it.
	Cause string `json:"cause,omitempty"`
	// RevertedConfig is ConfigKey of the config whose config-only change failed (the
	// quarantine is ConfigQuarantine: "<package>@<RevertedFrom>#config-<RevertedConfig>");
	// empty for a version rollback.
	RevertedConfig string `json:"revertedConfig,omitempty"`
	// Spec is the API spec of Version (Want.Spec): what its stage Jobs run with.
	Spec json.RawMessage `json:"spec,omitempty"`
	// BootID is the node's boot ID (status.nodeInfo.bootID) when this package's reboot
	// interrupt started; empty for other stages and interrupt types. A different boot ID
	// later means the reboot happened (see nodePass.rebooted). It stays set after an interrupt
	// its Pod completed before the node reported the new boot ID, until the node does
	// (creditReboots): until then a boot ID change is this reboot's.
	BootID string `json:"bootID,omitempty"`
	// Reapply: the node rebooted outside this set's reboot interrupts after this flow was done
	// (NodeRecord.Regate) and the package has reapplyOnReboot: its next flow runs this version
	// and config again, apply and config without the interrupt (startReapply). The flow's
	// record is replaced then.
	Reapply bool `json:"reapply,omitempty"`
}

func (a *Applied) clone() *Applied {
	if a == nil {
		return nil
	}
	c := *a
	c.Config = maps.Clone(a.Config)
	return &c
}

// Applied is one version of a package as a node applied it.
type Applied struct {
	Version   string              `json:"version"`
	Image     string              `json:"image,omitempty"`
	Config    map[string]string   `json:"config,omitempty"`
	Interrupt *v1alpha1.Interrupt `json:"interrupt,omitempty"`
	Uninstall bool                `json:"uninstall,omitempty"`
	Spec      json.RawMessage     `json:"spec,omitempty"`
}

// NodeRecord is a node's state for one set (the gantry.dev/state_<set> annotation, JSON).
type NodeRecord struct {
	Packages map[string]*PackageRecord `json:"packages,omitempty"`
	Rollout  v1alpha1.RolloutState     `json:"rollout,omitempty"`
	// Since is when Rollout began (soak: the window and round 0 start then).
	Since time.Time `json:"since"`
	// SoakRound is the soak check round under way while Rollout is Soaking (0 otherwise):
	// round k's Jobs are SoakJobName(..., k), so a restarted reconciler recomputes the same
	// names from the record and Now (nodePass.soak).
	SoakRound int `json:"soakRound,omitempty"`
	// Soaks counts the soak windows this node entered: part of the soak Pod names, so a node
	// that soaks again for the same flow (another package's flow or an interrupt sent it back
	// to Activating) runs new check Jobs instead of reading the last window's as passed.
	Soaks int `json:"soaks,omitempty"`
	// Flows counts the flows started on this node.
	Flows int `json:"flows"`
	// SettledFlows is Flows when the node last Converged: the packages whose Flow is above it
	// changed in the rollout under way (what a failing health check blames).
	SettledFlows int `json:"settledFlows,omitempty"`
	// Withdrawn are the packages whose new-package flow failed and was rolled back by removing
	// them (policy rollback, nothing to return to): package → the failed version, which is
	// quarantined. The node stays Reverted while the spec asks for it; an entry goes when the
	// package starts a new flow or leaves the spec.
	Withdrawn map[string]string `json:"withdrawn,omitempty"`
	// Observed are the failed runs of observe-mode health checks in the node's latest soak
	// window: check name → "health check <name> failed in round k/n: <reason>: <message>"
	// (the HealthChecksObserved condition lists them); emptied when a new window starts.
	Observed map[string]string `json:"observed,omitempty"`
	// Drain is the drain under way on the cordoned node before its interrupt (nil: none, or
	// done): when it began (spec.drain.timeout counts from it) and, after a timeout with
	// onTimeout Fail, the failure the node reports until the drain is tried again.
	Drain *DrainRecord `json:"drain,omitempty"`
	// DevicesBefore are the node's device plugin resources (ExtendedAllocatable) when this set
	// took its cordon: the cordon is released only once they are all allocatable again
	// (nodePass.releaseCordon); nil when the node had none or holds no cordon of this set.
	DevicesBefore map[string]int64 `json:"devicesBefore,omitempty"`
	// DevicesCheckAt is when the node's allocatable is first compared with DevicesBefore: the
	// node's work done plus DeviceSettle (nil until its work is done).
	DevicesCheckAt *time.Time `json:"devicesCheckAt,omitempty"`
	// NonInterruptSince is when the cordoned node was first found waiting for its
	// podNonInterruptLabels pods (spec.drain.nonInterruptTimeout counts from it); nil when it
	// waits for none.
	NonInterruptSince *time.Time `json:"nonInterruptSince,omitempty"`
	// BootID is the node's boot ID (status.nodeInfo.bootID) as last seen by a pass while no
	// reboot interrupt of this set was under way on it (regate.go): a pass that finds another
	// one, with none of this set's reboots to account for it, sees a reboot outside Gantry.
	// Empty until the first such pass, and for a node that reports none.
	BootID string `json:"bootID,omitempty"`
	// Regate is the re-gate under way after the node rebooted outside this set's reboot
	// interrupts (NodeWright's reapplyOnReboot): nil when none. It goes once the packages it
	// names have run their flows again.
	Regate *Regate `json:"regate,omitempty"`
}

// Regate is a node's re-gate after a reboot outside Gantry (NodeRecord.Regate).
type Regate struct {
	// From and To are the boot IDs before and after the reboot.
	From string `json:"from"`
	To   string `json:"to"`
	// Since is when the pass saw the reboot.
	Since time.Time `json:"since"`
	// Packages are the packages with reapplyOnReboot that run again, sorted.
	Packages []string `json:"packages"`
}

// Message is "rebooted outside Gantry (boot ID <from> → <to>): re-applying <packages>".
func (g *Regate) Message() string {
	return fmt.Sprintf("rebooted outside Gantry (boot ID %s → %s): re-applying %s", g.From, g.To, strings.Join(g.Packages, ", "))
}

// DrainRecord is a node's drain under way (NodeRecord.Drain). Its states: draining (Message
// empty, since Since) and failed (Message set, since Since; the next try starts after
// backoff(Failures)); see nodePass.drainStep.
type DrainRecord struct {
	// Since is when the drain began (its first eviction pass) or, once failed, when it failed.
	Since time.Time `json:"since"`
	// Failures counts the drain's timeouts under onTimeout Fail (the backoff before a retry).
	Failures int32 `json:"failures,omitempty"`
	// Message is the last timeout while the node is erroring for it ("drain timed out after
	// 5m0s; pods left: ..."); empty while draining.
	Message string `json:"message,omitempty"`
}

// Clone deep-copies r (nil stays nil).
func (r *NodeRecord) Clone() *NodeRecord {
	if r == nil {
		return nil
	}
	out := *r
	out.Withdrawn = maps.Clone(r.Withdrawn)
	out.Observed = maps.Clone(r.Observed)
	out.DevicesBefore = maps.Clone(r.DevicesBefore)
	if r.DevicesCheckAt != nil {
		at := *r.DevicesCheckAt
		out.DevicesCheckAt = &at
	}
	if r.NonInterruptSince != nil {
		at := *r.NonInterruptSince
		out.NonInterruptSince = &at
	}
	if r.Drain != nil {
		d := *r.Drain
		out.Drain = &d
	}
	if r.Regate != nil {
		g := *r.Regate
		g.Packages = slices.Clone(r.Regate.Packages)
		out.Regate = &g
	}
	out.Packages = map[string]*PackageRecord{}
	for k, p := range r.Packages {
		c := *p
		c.Config = maps.Clone(p.Config)
		c.Prev = p.Prev.clone()
		out.Packages[k] = &c
	}
	return &out
}

// Gate is what sets earlier on the node (lower priority number) allow.
type Gate int

const (
	// GateOpen: every earlier set is complete (or disabled) on the node.
	GateOpen Gate = iota
	// GateWaiting: an earlier set is not complete on the node yet.
	GateWaiting
	// GatePaused: an earlier set is paused on the node.
	GatePaused
)

// JobFact is what the controller saw of one stage Pod (failure.PodOutcome; the name JobSpec /
// JobFact predates stage Pods, which replaced stage Jobs).
type JobFact struct {
	Succeeded bool
	Failed    bool
	// Reason and Message of the failure (the pod's reason, e.g. the kubelet's DeadlineExceeded,
	// and its failing container's exit code and termination message; or the pod's waiting
	// reason for an image that cannot be pulled).
	Reason, Message string
	// ImagePullError is set while the stage pod cannot pull its image (failure.ImagePullReasons:
	// ErrImagePull, ImagePullBackOff, InvalidImageName, ...) or the kubelet cannot create or start
	// its container (failure.ContainerStartReasons: CreateContainerError, ...): the stage is
	// erroring, the pod is deleted (and created again, as the next attempt, after the backoff).
	ImagePullError bool
	// Stop is set on a failed stage whose pod has not ended (past its deadline on a node whose
	// kubelet did not end it): the pod is deleted, as the Job controller deleted a Job's pods
	// past its deadline.
	Stop bool
}

// mustDelete: the failed stage's pod is deleted (ImagePullError or Stop).
func (j JobFact) mustDelete() bool { return j.ImagePullError || j.Stop }

// NodeFacts are what the controller observed of one node for the set.
type NodeFacts struct {
	Name string
	// Selected is false for a node that still has a record but no longer matches the selector
	// (its packages are removed: uninstall where enabled).
	Selected bool
	// Record is the node's annotation, nil if none.
	Record *NodeRecord
	// Blocked, if non-empty, says which taint the stage pods do not tolerate and nothing in the
	// cluster removes for this set (TaintHold's blocked): the node is blocked, the set Stalled.
	Blocked string
	// WaitFor, if non-empty, names the taints the stage pods do not tolerate that a controller
	// in the cluster removes (TaintHold's waitFor): the node waits (status waiting, reason
	// WaitingForTaint), as Skyhook waits; Blocked wins when both are set.
	WaitFor string
	Gate    Gate
	// GateSet names the earlier set behind Gate (GateWaiting, GatePaused); "" when open.
	GateSet string
	// Jobs are this set's stage Jobs on the node, by name.
	Jobs map[string]JobFact
	// Cordoned: this set holds the node's cordon (gantry.dev/cordon_<set>) and the node is
	// unschedulable.
	Cordoned bool
	// Drained: no pod left to evict, none evicted still terminating and none the drain keeps
	// (Unevictable) (valid when Cordoned).
	Drained bool
	// NonInterrupt names ("namespace/name") the node's running pods matching the set's
	// podNonInterruptLabels (valid when Cordoned): while any runs, the node is neither drained
	// nor interrupted (Skyhook: cordon, wait for them, then drain).
	NonInterrupt []string
	// Terminating names ("namespace/name") the pods to drain that are already being deleted
	// (evicted, their grace period running; valid when Cordoned): the node is not drained
	// until they are gone.
	Terminating []string
	// Evicting names ("namespace/name") the pods the drain still has to evict (valid when
	// Cordoned): each pass that drains evicts them again, until the Eviction API accepts.
	Evicting []string
	// Unevictable names the pods spec.drain forbids the drain to evict, with why
	// ("namespace/name: uses emptyDir data (drain.deleteEmptyDirData is false)"; valid when
	// Cordoned): they hold the drain until they go or the drain times out.
	Unevictable []string
	// EvictRefusals: pod ("namespace/name") of Evicting → why the Eviction API refuses it now
	// (a dry-run eviction's answer, e.g. the PodDisruptionBudget). Read by the controller only
	// in the pass where the drain reaches spec.drain.timeout (DrainTimedOut), to name why the
	// pods left did not leave.
	EvictRefusals map[string]string
	// BootID is the node's status.nodeInfo.bootID ("" if the node reports none): it changes
	// when the node reboots.
	BootID string
	// Allocatable is the node's device plugin resources now (ExtendedAllocatable): resource →
	// allocatable count.
	Allocatable map[string]int64
	// Compartment is the deployment policy compartment the node's labels put it in
	// (CompartmentMatcher; "" or DefaultCompartment: none picks it).
	Compartment string
	// Wave is the node's rollout wave (WaveMatcher; 0 without waves).
	Wave int
	// Skyhook is the node's Skyhook state for the Skyhook the set adopts from
	// (gantry.dev/adopt-from-skyhook; AdoptSkyhook); nil when the set adopts from none, the
	// node is not selected or has no such state. SkyhookUnreadable says why a state annotation
	// that is there does not parse (nothing is adopted on the node then).
	Skyhook           SkyhookNodeState
	SkyhookUnreadable string
}

// SetFacts are the facts of one pass.
type SetFacts struct {
	Now        time.Time
	Name       string
	Generation int64
	Deleting   bool
	// Wants are the packages, in the user's order.
	Wants            []Want
	Paused, Disabled bool
	// Serial is spec.serial: one package flow at a time on a node (startSerial).
	Serial bool
	// AdoptFrom is the Skyhook the set adopts nodes from (gantry.dev/adopt-from-skyhook), ""
	// for none.
	AdoptFrom string
	// SpecError, if non-empty, is what the controller found wrong with the spec before it
	// could gather node facts (e.g. a node selector the API rejects): the set is Stalled
	// (InvalidSpec) with this message; a deletion still releases the nodes with records.
	SpecError string
	// KeepInstalled: spec.uninstallOnDelete is false. A deletion runs no stage: node records
	// and cordons are dropped and the finalizer removed; the packages stay installed.
	KeepInstalled bool
	Budget        *v1alpha1.InterruptionBudget
	// Soak is spec.rollout.soakDuration (0: no soak); SoakInterval is
	// spec.rollout.soakCheckInterval (0: the default, see SoakInterval).
	Soak, SoakInterval time.Duration
	// OnHealthFailure is the rollout's policy ("" is halt).
	OnHealthFailure v1alpha1.HealthFailurePolicy
	// Quarantined are the versions already quarantined (status.quarantinedVersions,
	// "<package>@<version>").
	Quarantined []string
	// ClearQuarantine are the quarantine keys an operator asked to lift (the set's annotation
	// gantry.dev/clear-quarantine, ParseClearQuarantine; the gantry_package_set_clear_quarantine
	// action writes it): see clearQuarantine.
	ClearQuarantine []string
	// Policy is the deployment policy (PolicyOf; nil: Budget alone).
	Policy *Policy
	// Waves are the rollout waves' names in order (spec.rollout.waves; nil: none).
	Waves []string
	// WaveSoaks are the waves' own soak windows, by wave index (spec.rollout.waves[].soakDuration,
	// NixFleet's soakMinutes); a negative one, or a node past the list (no wave picks it), soaks
	// for Soak (SoakOf).
	WaveSoaks []time.Duration
	// HealthChecks are the rollout's health checks (spec.rollout.healthChecks): name → the
	// timeout of one run. Run in every soak round beside the packages' checks.
	HealthChecks []HealthCheck
	// NodeEdges are spec.rollout.nodeEdges (NixFleet's edges between hosts; edges.go).
	NodeEdges []v1alpha1.NodeEdge
	// ConvergedWaits are the spec.afterConverged entries that hold the set now (NixFleet's
	// channelEdges; ConvergedWaits in converged.go): one line each, "package set <name>
	// [(<reason>)] is ..."; while any is listed, no node starts (nodes in flight finish).
	ConvergedWaits []string
	// Fleet is the shared budget of spec.rollout.fleetBudget (nil: none; fleetbudget.go).
	Fleet *FleetFacts
	// Release is why spec.rollout.release may not start nodes (CheckRelease; nil: no release,
	// or it verifies and is fresh): not verified holds every node, stale starts no new node.
	Release *ReleaseRefusal
	// Drain is spec.drain (DrainSpecOf): the drain's timeout and what happens at it.
	Drain DrainSpec
	// Nodes, any order (the plan sorts them by name).
	Nodes []NodeFacts
}

// HealthCheck is a health gate as the machine sees it: its name, the bound of one run, and
// whether a failed run only is observed (mode observe) instead of failing the node.
type HealthCheck struct {
	Name    string
	Timeout time.Duration
	Observe bool
}

// JobSpec is a stage Job to create.
type JobSpec struct {
	Name, Node, Package, Version, Image string
	Stage                               Stage
	// Interrupt is the merged interrupt (stage interrupt only).
	Interrupt *v1alpha1.Interrupt
	Timeout   time.Duration
	// SoakCheck: the Pod runs only Stage's check (re-run while the node soaks), no stage;
	// SoakRound is its round (0 first).
	SoakCheck bool
	SoakRound int
	// Probe, if set, names the health check (spec.rollout.healthChecks) the soak-round Pod
	// runs instead of a package's check (Package, Version, Image and Stage are empty).
	Probe string
	// Spec is the package's API spec (JSON) of the version the stage runs (the record's, not
	// necessarily the current spec's: rollback, removal); empty for records written before
	// specs were kept.
	Spec []byte
}

// NodePlan is what to do on one node.
type NodePlan struct {
	Name string
	// Record is the node's new record; nil: remove the annotations.
	Record *NodeRecord
	// Queued: the node is selected and waits with nothing started (Pending). It keeps no
	// record (Record is nil) and the set's status lists it as Pending.
	Queued bool
	Status Status
	Jobs   []JobSpec
	// DeleteJobs are stage Pods to delete (failed image pulls, pods past their deadline).
	DeleteJobs []string
	// Cordon: cordon the node and record gantry.dev/cordon_<set>; Drain: evict its pods;
	// Uncordon: drop this set's cordon (the node is uncordoned when no set holds it).
	Cordon, Drain, Uncordon bool
	// DrainNonInterrupt: the drain evicts the node's podNonInterruptLabels pods too (they ran
	// past drain.nonInterruptTimeout under onNonInterruptTimeout Drain).
	DrainNonInterrupt bool
	// DevicesWait, when set, is why the cordon is kept though the node's work is done: the
	// device resources it had at the cordon are not all allocatable again (releaseCordon).
	DevicesWait string
}

// Failure names one failing stage on one node.
type Failure struct {
	Node, Package string
	Stage         Stage
	Message       string
}

// String is "node <node> package <package> stage <stage>: <message>" ("stage <stage>" left
// out when no stage applies, e.g. a withdrawn package).
func (f Failure) String() string {
	if f.Stage == "" {
		return fmt.Sprintf("node %s package %s: %s", f.Node, f.Package, f.Message)
	}
	return fmt.Sprintf("node %s package %s stage %s: %s", f.Node, f.Package, f.Stage, f.Message)
}

// Decision is the outcome of one pass.
type Decision struct {
	Nodes           []NodePlan
	Status          Status
	Conditions      []metav1.Condition
	CompleteNodes   string
	NodesInProgress int32
	Failures        []Failure
	// Quarantined is every quarantined version ("<package>@<version>", Quarantine) and config
	// ("<package>@<version>#config-<hash>", ConfigQuarantine), sorted: the facts' ones plus the
	// ones this pass (or a node record of a rollback) adds.
	Quarantined []string
	// Stalled names the wanted packages whose version or config is quarantined (the key): no
	// flow starts for them until the spec's version (or config) changes.
	Stalled []string
	// QuarantineLifted are the ClearQuarantine keys this pass lifted; QuarantinePending the
	// ones still held by a rollback in progress (they stay asked for). Sorted.
	QuarantineLifted, QuarantinePending []string
	// DrainBlockers: node → what holds up its drain ("waiting for non-interrupt pods: ns/a",
	// "waiting for evicted pods to terminate: ns/b" from the facts, refused evictions added by
	// AddDrainRefusals); the DrainBlocked condition lists them.
	DrainBlockers map[string]string
	// DrainTimeouts: node → what happened in this pass at its drain's timeout (the pods left
	// and why, and what onTimeout did): the controller emits one Warning event DrainTimeout
	// each. Only the pass in which the timeout passes reports it.
	DrainTimeouts map[string]string
	// Regated: node → what this pass found on it: "node <node> rebooted outside Gantry (boot
	// ID a → b): re-applying <packages>" (regate.go). Only the pass that sees the reboot
	// reports it; the controller emits one Normal event RebootedOutsideGantry each.
	Regated map[string]string
	// Adopted: node → "node <node>: adopted from Skyhook <skyhook>: <package>@<version>, ..."
	// for the packages this pass recorded complete from the node's Skyhook state
	// (AdoptSkyhook); AdoptSkipped: node → why packages Skyhook had there run again (another
	// version, not complete, another image, an unreadable state). Only the pass that records
	// them reports them; the controller emits one event each (AdoptedFromSkyhook, Normal;
	// NotAdoptedFromSkyhook, Warning).
	Adopted, AdoptSkipped map[string]string
	// DeviceWaits: node → the device resources it waits for before its cordon is released
	// ("nvidia.com/gpu 0 of 2 allocatable"; NodePlan.DevicesWait), for the conditions' message.
	DeviceWaits map[string]string
	// PausedBy: the set is waiting only because of paused earlier sets, "<node> (by <set>)"
	// per waiting node; nil otherwise.
	PausedBy []string
	// Compartments is the deployment policy's progress (status.compartments; nil without a
	// policy); Stopped says which compartments a run of failed batches stopped.
	Compartments []v1alpha1.CompartmentStatus
	Stopped      []string
	// Release is the release refusal the set reports (Stalled with its reason; releaseRefused).
	Release *ReleaseRefusal
	// Wave is the name of the wave under way (WaveName; "" without waves or when all are done).
	Wave string
	// NodeEdgeWaits are the nodes node edges hold: "<after> waits for <before>, ..." (by node).
	NodeEdgeWaits []string
	// Fleet is the shared budget's use after the pass (nil without one).
	Fleet *v1alpha1.FleetBudgetStatus
	// ConvergedWaits are the facts' ConvergedWaits when they held a node this pass (nil
	// otherwise): status.afterConvergedWaits.
	ConvergedWaits []string
	// Finished: the set is being deleted and nothing is left on any node: remove the finalizer.
	Finished     bool
	RequeueAfter time.Duration
}
