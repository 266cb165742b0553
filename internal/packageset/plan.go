package packageset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Backoff bounds for retrying an erroring stage: BackoffMin·2^(restarts-1), at most BackoffMax.
const (
	BackoffMin = 5 * time.Second
	BackoffMax = 5 * time.Minute
	// DefaultStageTimeout bounds one stage attempt when the package sets no stageTimeout.
	DefaultStageTimeout = 10 * time.Minute
	// Poll is the requeue delay while work is under way (Job and Node watches normally trigger
	// a pass earlier).
	Poll = 5 * time.Second
	// MinDefaultSoakCheckInterval is the floor of the default soak check interval
	// (soakDuration/3, at least this; SoakInterval).
	MinDefaultSoakCheckInterval = 5 * time.Second
	// MinSoakCheckInterval is the floor of an explicit spec.rollout.soakCheckInterval (the CRD
	// rejects less; the machine clamps a smaller value to it).
	MinSoakCheckInterval = time.Second
)

// Condition types and reasons besides the kstatus ones.
const (
	ConditionTaintNotTolerable = "TaintNotTolerable" // Skyhook's; True while some node is blocked
	ConditionDrainBlocked      = "DrainBlocked"      // True while an eviction is refused (PDB, ...)
	ReasonComplete             = "Complete"
	ReasonInProgress           = "InProgress"
	ReasonWaiting              = "Waiting"
	ReasonErroring             = "StageErroring"
	ReasonBlocked              = "TaintNotTolerable"
	ReasonPaused               = "Paused"
	ReasonDisabled             = "Disabled"
	ReasonInvalidSpec          = "InvalidSpec"
	ReasonDeleting             = "Uninstalling"
	// ReasonUninstallFailed: the set is being deleted and an uninstall stage fails (Stalled:
	// the deletion cannot finish until the package is fixed or uninstallOnDelete is false).
	ReasonUninstallFailed = "UninstallFailed"
	// ReasonWaitingForPausedSet: the set's nodes wait for an earlier set that is paused
	// (Reconciling=False: nothing moves until that set is resumed).
	ReasonWaitingForPausedSet = "WaitingForPausedSet"
	ReasonDrainBlocked        = "DrainBlocked"
	// ReasonVersionQuarantined: the spec asks for a version a rollback quarantined (Stalled).
	ReasonVersionQuarantined = "VersionQuarantined"
)

// MaxFailuresListed is how many failing node/package/stage lines a message names before it
// says how many more there are.
const MaxFailuresListed = 12

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
	// Spec is the package's API spec as JSON (env, config values, pod labels, ...), kept in the
	// node records so a rollback or a removed package's uninstall runs with the spec of the
	// version it runs, not the current one (Skyhook #186). Opaque to the machine.
	Spec []byte
}

// WantOf maps an API package to a Want.
func WantOf(p v1alpha1.Package) Want {
	w := Want{Name: p.Name, Version: p.Version, Image: p.Image, Config: ConfigHashes(p.Config), Interrupt: p.Interrupt,
		ConfigInterrupts: p.ConfigInterrupts, Uninstall: p.Uninstall != nil && p.Uninstall.Enabled, StageTimeout: DefaultStageTimeout}
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
			return fmt.Errorf("dependsOn cycle: %s", strings.Join(append(path, pkgs[i].Name), " → "))
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
	// Flow numbers the flow (job names include it, so a re-run flow never reuses a Job).
	Flow int `json:"flow"`
	// Prev is what the package was before this flow (what a rollback returns to): the previous
	// version for a version change, the same version with its previous config (and spec) for a
	// config-only change; nil for a new package (New) and for a removal.
	Prev *Applied `json:"prev,omitempty"`
	// New: this flow installs a package the node did not have (seed 000's apply flow with no
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
	// RevertedConfig is ConfigKey of the config whose config-only change failed (the
	// quarantine is ConfigQuarantine: "<package>@<RevertedFrom>#config-<RevertedConfig>");
	// empty for a version rollback.
	RevertedConfig string `json:"revertedConfig,omitempty"`
	// Spec is the API spec of Version (Want.Spec): what its stage Jobs run with.
	Spec json.RawMessage `json:"spec,omitempty"`
	// BootID is the node's boot ID (status.nodeInfo.bootID) when this package's reboot
	// interrupt started; empty for other stages and interrupt types. A different boot ID
	// later means the reboot happened (see nodePass.rebooted).
	BootID string `json:"bootID,omitempty"`
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

// Quarantine is a quarantined version's key, "<package>@<version>" (status.quarantinedVersions):
// the version failed (a stage, its soak check, or the uninstall that a downgrade to it needs)
// and was rolled back (policy rollback). A set asking for it is Stalled until the version
// changes.
func Quarantine(pkg, version string) string { return pkg + "@" + version }

// ConfigKey is a short hash (8 hex digits) of a package's config hashes (ConfigHashes: key →
// value hash), independent of map order; "" config and nil give the same key.
func ConfigKey(config map[string]string) string {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, config[k])
	}
	return shortHash(b.String())[:8]
}

// ConfigQuarantine is the key of a quarantined config, "<package>@<version>#config-<ConfigKey>"
// (status.quarantinedVersions): a config-only change of version to config failed and was
// rolled back to the previous config (policy rollback). The version itself is not
// quarantined (it still works with its previous config); a set asking for this version with
// this config is Stalled until the config (or the version) changes.
func ConfigQuarantine(pkg, version string, config map[string]string) string {
	return pkg + "@" + version + "#config-" + ConfigKey(config)
}

// quarantineKey is the quarantine a rollback flow holds ("" for any other record).
func (r *PackageRecord) quarantineKey(name string) string {
	switch {
	case !r.Reverting || r.RevertedFrom == "":
		return ""
	case r.RevertedConfig != "":
		return name + "@" + r.RevertedFrom + "#config-" + r.RevertedConfig
	}
	return Quarantine(name, r.RevertedFrom)
}

// quarantinedKey is the quarantine key that stalls w ("<package>@<version>", else its
// "#config-<hash>" key), "" if none.
func quarantinedKey(quarantine map[string]bool, w *Want) string {
	if q := Quarantine(w.Name, w.Version); quarantine[q] {
		return q
	}
	if q := ConfigQuarantine(w.Name, w.Version, w.Config); quarantine[q] {
		return q
	}
	return ""
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
	// Flows counts the flows started on this node.
	Flows int `json:"flows"`
	// Withdrawn are the packages whose new-package flow failed and was rolled back by removing
	// them (policy rollback, nothing to return to): package → the failed version, which is
	// quarantined. The node stays Reverted while the spec asks for it; an entry goes when the
	// package starts a new flow or leaves the spec.
	Withdrawn map[string]string `json:"withdrawn,omitempty"`
}

// Clone deep-copies r (nil stays nil).
func (r *NodeRecord) Clone() *NodeRecord {
	if r == nil {
		return nil
	}
	out := *r
	out.Withdrawn = maps.Clone(r.Withdrawn)
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

// JobFact is what the controller saw of one stage Job.
type JobFact struct {
	Succeeded bool
	Failed    bool
	// Reason and Message of the failure (the Job's Failed condition, or the pod's waiting reason
	// for an image that cannot be pulled).
	Reason, Message string
	// ImagePullError is set while the Job's pod cannot pull its image (failure.ImagePullReasons:
	// ErrImagePull, ImagePullBackOff, InvalidImageName, ...): the stage is erroring, the Job is deleted.
	ImagePullError bool
}

// NodeFacts are what the controller observed of one node for the set.
type NodeFacts struct {
	Name string
	// Selected is false for a node that still has a record but no longer matches the selector
	// (its packages are removed: uninstall where enabled).
	Selected bool
	// Record is the node's annotation, nil if none.
	Record *NodeRecord
	// Blocked, if non-empty, says which taint the stage pods do not tolerate.
	Blocked string
	Gate    Gate
	// GateSet names the earlier set behind Gate (GateWaiting, GatePaused); "" when open.
	GateSet string
	// Jobs are this set's stage Jobs on the node, by name.
	Jobs map[string]JobFact
	// Cordoned: this set holds the node's cordon (gantry.dev/cordon_<set>) and the node is
	// unschedulable.
	Cordoned bool
	// Drained: no pod left to evict and none evicted still terminating (valid when Cordoned).
	Drained bool
	// NonInterrupt names ("namespace/name") the node's running pods matching the set's
	// podNonInterruptLabels (valid when Cordoned): while any runs, the node is neither drained
	// nor interrupted (Skyhook: cordon, wait for them, then drain).
	NonInterrupt []string
	// Terminating names ("namespace/name") the pods to drain that are already being deleted
	// (evicted, their grace period running; valid when Cordoned): the node is not drained
	// until they are gone.
	Terminating []string
	// BootID is the node's status.nodeInfo.bootID ("" if the node reports none): it changes
	// when the node reboots.
	BootID string
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
	// Nodes, any order (the plan sorts them by name).
	Nodes []NodeFacts
}

// JobSpec is a stage Job to create.
type JobSpec struct {
	Name, Node, Package, Version, Image string
	Stage                               Stage
	// Interrupt is the merged interrupt (stage interrupt only).
	Interrupt *v1alpha1.Interrupt
	Timeout   time.Duration
	// SoakCheck: the Job runs only Stage's check (re-run while the node soaks), no stage;
	// SoakRound is its round (0 first).
	SoakCheck bool
	SoakRound int
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
	Status Status
	Jobs   []JobSpec
	// DeleteJobs are Jobs to delete (failed image pulls).
	DeleteJobs []string
	// Cordon: cordon the node and record gantry.dev/cordon_<set>; Drain: evict its pods;
	// Uncordon: drop this set's cordon (the node is uncordoned when no set holds it).
	Cordon, Drain, Uncordon bool
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
	// PausedBy: the set is waiting only because of paused earlier sets, "<node> (by <set>)"
	// per waiting node; nil otherwise.
	PausedBy []string
	// Finished: the set is being deleted and nothing is left on any node: remove the finalizer.
	Finished     bool
	RequeueAfter time.Duration
}

// JobName is the deterministic name of the Job running stage of pkg's flow on node, attempt
// restarts: the same inputs always give the same name, so a restarted reconciler never starts
// a second copy, and a new flow or attempt always a new one. At most 49 characters.
func JobName(set, node, pkg string, flow int, stage Stage, attempt int32) string {
	abbrev := map[Stage]string{v1alpha1.StageUninstall: "un", v1alpha1.StageApply: "ap", v1alpha1.StageConfig: "cf",
		v1alpha1.StageUpgrade: "up", v1alpha1.StageInterrupt: "in", v1alpha1.StagePostInterrupt: "pi"}[stage]
	h := shortHash(fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%s\x00%d", set, node, pkg, flow, stage, attempt))[:10]
	return strings.Trim(cut(set, 18), "-") + "-" + strings.Trim(cut(pkg, 16), "-") + "-" + abbrev + "-" + h
}

// SoakJobName is the deterministic name of the Job re-running the check of pkg's last stage
// in soak round round (0 first) while node soaks after flow (attempt restarts: a retried flow
// soaks with new Jobs). Round 0 keeps the name of the single soak check of earlier releases.
// At most 49 characters.
func SoakJobName(set, node, pkg string, flow int, restarts int32, round int) string {
	in := fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00soak\x00%d", set, node, pkg, flow, restarts)
	if round > 0 {
		in += fmt.Sprintf("\x00%d", round)
	}
	h := shortHash(in)[:10]
	return strings.Trim(cut(set, 18), "-") + "-" + strings.Trim(cut(pkg, 16), "-") + "-sk-" + h
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// SoakInterval is the time between the starts of two soak check rounds (seed 001: "probes
// have started; soak window has not yet elapsed"): interval (spec.rollout.soakCheckInterval)
// when set, at least MinSoakCheckInterval; unset (0): soak/3, at least
// MinDefaultSoakCheckInterval (5s).
func SoakInterval(soak, interval time.Duration) time.Duration {
	if interval > 0 {
		return max(interval, MinSoakCheckInterval)
	}
	return max(soak/3, MinDefaultSoakCheckInterval)
}

// SoakRounds is the index of the last soak check round of a window soak long with rounds
// interval apart: ceil(soak/interval) (0 when soak <= 0). Round k starts SoakRoundStart after
// the node began Soaking; the last one starts when the window ends.
func SoakRounds(soak, interval time.Duration) int {
	if soak <= 0 || interval <= 0 {
		return 0
	}
	return int((soak + interval - 1) / interval)
}

// SoakRoundStart is when round k is due, after the node began Soaking: min(k·interval, soak).
// Round 0 starts at once, the last (SoakRounds) at the end of the window.
func SoakRoundStart(k int, soak, interval time.Duration) time.Duration {
	if k <= 0 {
		return 0
	}
	if interval <= 0 || time.Duration(k) > soak/interval {
		return soak
	}
	return min(time.Duration(k)*interval, soak)
}

// backoff is the delay before retry number restarts (>= 1).
func backoff(restarts int32) time.Duration {
	d := BackoffMin
	for i := int32(1); i < restarts && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// Plan is one pass of the machine over every node of the set. Errors: an illegal transition
// (a bug or a hand-edited annotation; the caller reports it and changes nothing).
func Plan(f SetFacts) (Decision, error) {
	var d Decision
	wants, specErr := Order(f.Wants)
	if f.SpecError != "" {
		specErr = errors.New(f.SpecError)
	}
	nodes := append([]NodeFacts(nil), f.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	selected := countSelected(nodes)
	budget := Budget(f.Budget, selected)
	var listed []string
	nodes, listed, d.QuarantineLifted, d.QuarantinePending = clearQuarantine(f.ClearQuarantine, f.Quarantined, nodes)
	quarantine := quarantineSet(listed, nodes)
	inflight, cordoned, failed := rolloutCounts(nodes)
	halted := failed || (stalledWants(wants, quarantine) != nil && !f.Deleting)

	// Cordons are bounded by the budget on their own too: after the budget shrinks, nodes
	// already in flight finish their stages but no more than the budget are interrupted.
	cordonSlots := budget - cordoned
	statuses := make([]Status, 0, len(nodes))
	var blocked, pausedBy []string
	for _, n := range nodes {
		var nodeWants []Want
		if n.Selected && !f.Deleting {
			nodeWants = wants
		}
		p := newNodePass(f, n, nodeWants, &cordonSlots, quarantine)
		if f.Deleting && f.KeepInstalled {
			// uninstallOnDelete false: leave the packages, release the node.
			d.Nodes = append(d.Nodes, NodePlan{Name: n.Name, Uncordon: n.Cordoned})
			continue
		}
		wasInFlight := n.Record != nil && (InFlight(n.Record.Rollout) || n.Cordoned)
		var blockedMsg, pausedMsg string
		p.hold, blockedMsg, pausedMsg = nodeHold(f, n, specErr)
		if blockedMsg != "" {
			blocked = append(blocked, blockedMsg)
		}
		if pausedMsg != "" {
			pausedBy = append(pausedBy, pausedMsg)
		}
		p.grant(wasInFlight, &inflight, budget, halted)
		plan, err := p.run()
		if err != nil {
			return d, fmt.Errorf("node %s: %w", n.Name, err)
		}
		d.addNode(n, plan, &p)
		if pausedMsg != "" && plan.Status != v1alpha1.StatusWaiting {
			pausedBy = pausedBy[:len(pausedBy)-1] // this node's entry: still finishing what it started
		}
		if n.Selected {
			statuses = append(statuses, plan.Status)
		}
	}
	d.Quarantined = sortedKeys(quarantine)
	if !f.Deleting && specErr == nil {
		d.Stalled = stalledWants(wants, quarantine)
	}
	d.CompleteNodes = fmt.Sprintf("%d/%d", statusCount(statuses, v1alpha1.StatusComplete), selected)
	d.NodesInProgress = int32(statusCount(statuses, v1alpha1.StatusInProgress))
	d.Status = setStatus(f, specErr, statuses, d.Stalled)
	if f.Deleting {
		d.Finished = deleteFinished(d.Nodes)
	}
	if d.Status != v1alpha1.StatusComplete && d.RequeueAfter == 0 {
		d.RequeueAfter = Poll
	}
	if d.Status == v1alpha1.StatusWaiting && len(pausedBy) == statusCount(statuses, v1alpha1.StatusWaiting) && len(pausedBy) > 0 {
		d.PausedBy = pausedBy
	}
	d.Conditions = conditions(f, d, specErr, blocked)
	return d, nil
}

// countSelected is the number of nodes the selector picks.
func countSelected(nodes []NodeFacts) int {
	selected := 0
	for _, n := range nodes {
		if n.Selected {
			selected++
		}
	}
	return selected
}

// quarantineSet is the set of quarantine keys ("<package>@<version>", or with
// "#config-<hash>"): those the set's status lists, those a node's record names for a failed
// package, and the versions a node withdrew.
func quarantineSet(listed []string, nodes []NodeFacts) map[string]bool {
	quarantine := map[string]bool{}
	for _, q := range listed {
		quarantine[q] = true
	}
	for _, n := range nodes {
		if n.Record == nil {
			continue
		}
		for name, r := range n.Record.Packages {
			if q := r.quarantineKey(name); q != "" {
				quarantine[q] = true
			}
		}
		for name, v := range n.Record.Withdrawn {
			quarantine[Quarantine(name, v)] = true
		}
	}
	return quarantine
}

// rolloutCounts counts the nodes in flight (a rollout state InFlight says so, or cordoned)
// and the cordoned nodes, and says whether any node's rollout Failed (which halts the rollout).
func rolloutCounts(nodes []NodeFacts) (inflight, cordoned int, failed bool) {
	for _, n := range nodes {
		if n.Cordoned {
			cordoned++
		}
		if n.Record != nil && (InFlight(n.Record.Rollout) || n.Cordoned) {
			inflight++
		}
		if n.Record != nil && n.Record.Rollout == v1alpha1.RolloutFailed {
			failed = true
		}
	}
	return inflight, cordoned, failed
}

// newNodePass is the pass over node n with a copy of its record (an empty one if it has none).
func newNodePass(f SetFacts, n NodeFacts, wants []Want, cordonSlots *int, quarantine map[string]bool) nodePass {
	p := nodePass{f: f, n: n, wants: wants, rec: n.Record.Clone(), cordonSlots: cordonSlots, quarantine: quarantine}
	if p.rec == nil {
		p.rec = &NodeRecord{}
	}
	if p.rec.Packages == nil {
		p.rec.Packages = map[string]*PackageRecord{}
	}
	return p
}

// nodeHold is the status that holds node n this pass ("" for none); when the node is
// blocked, the "<node>: <reason>" line for the set's condition; when a paused set gates a
// selected node, the "<node> (by <set>)" entry for PausedBy. Deleting holds nothing.
func nodeHold(f SetFacts, n NodeFacts, specErr error) (hold Status, blocked, pausedBy string) {
	switch {
	case f.Deleting:
		return "", "", ""
	case specErr != nil:
		return v1alpha1.StatusUnknown, "", ""
	case n.Blocked != "" && n.Selected:
		return v1alpha1.StatusBlocked, n.Name + ": " + n.Blocked, ""
	case f.Disabled:
		return v1alpha1.StatusDisabled, "", ""
	case f.Paused:
		return v1alpha1.StatusPaused, "", ""
	case n.Gate == GatePaused:
		if n.Selected {
			return v1alpha1.StatusWaiting, "", n.Name + " (by " + n.GateSet + ")"
		}
		return v1alpha1.StatusWaiting, "", ""
	case n.Gate == GateWaiting:
		return v1alpha1.StatusWaiting, "", ""
	}
	return "", "", ""
}

// grant decides whether the pass may start new stages on the node: a node already in flight
// keeps its grant; another gets one of the budget's slots (inflight counts them) when nothing
// holds it, it has work to do and the rollout is not halted.
func (p *nodePass) grant(wasInFlight bool, inflight *int, budget int, halted bool) {
	p.granted = wasInFlight
	if !p.granted && p.hold == "" && p.needsWork() && *inflight < budget && !halted {
		p.granted = true
		*inflight++
	}
}

// sortedKeys is the set's keys in order (nil for an empty set).
func sortedKeys(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// addNode adds node n's plan to the decision with what its pass found: the drain's blocker,
// the failures and the earliest requeue.
func (d *Decision) addNode(n NodeFacts, plan NodePlan, p *nodePass) {
	if msg := drainWait(n); msg != "" && !plan.Uncordon {
		if d.DrainBlockers == nil {
			d.DrainBlockers = map[string]string{}
		}
		d.DrainBlockers[n.Name] = msg
	}
	d.Nodes = append(d.Nodes, plan)
	d.Failures = append(d.Failures, p.failures...)
	if p.requeue > 0 && (d.RequeueAfter == 0 || p.requeue < d.RequeueAfter) {
		d.RequeueAfter = p.requeue
	}
}

// setStatus is the set's one-word summary: disabled or paused when the user asked (unless
// deleting), unknown for a spec error, else the aggregate of the selected nodes' statuses,
// with erroring instead of waiting/unknown when a wanted version is quarantined (stalled).
func setStatus(f SetFacts, specErr error, statuses []Status, stalled []string) Status {
	switch {
	case f.Disabled && !f.Deleting:
		return v1alpha1.StatusDisabled
	case f.Paused && !f.Deleting:
		return v1alpha1.StatusPaused
	case specErr != nil:
		return v1alpha1.StatusUnknown
	}
	st := Aggregate(statuses)
	if len(stalled) > 0 && (st == v1alpha1.StatusWaiting || st == v1alpha1.StatusUnknown) {
		st = v1alpha1.StatusErroring // nothing will move until the version changes
	}
	return st
}

// deleteFinished says whether a deleting set is done: no node keeps a record, a cordon or a Job.
func deleteFinished(nodes []NodePlan) bool {
	for _, np := range nodes {
		if np.Record != nil || np.Cordon || len(np.Jobs) > 0 {
			return false
		}
	}
	return true
}

// drainWait says what a cordoned node's drain waits for in the facts ("" if nothing): running
// non-interrupt pods first (the drain has not started), else evicted pods still terminating.
func drainWait(n NodeFacts) string {
	switch {
	case !n.Cordoned:
		return ""
	case len(n.NonInterrupt) > 0:
		return "waiting for non-interrupt pods: " + strings.Join(n.NonInterrupt, ", ")
	case len(n.Terminating) > 0 && !n.Drained:
		return "waiting for evicted pods to terminate: " + strings.Join(n.Terminating, ", ")
	}
	return ""
}

// AddDrainRefusals folds what refused this pass's evictions (node → message, e.g. "pod ns/a:
// Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget
// pdb-a needs 1 healthy pods and has 1 currently)") into DrainBlockers and the DrainBlocked
// condition. The controller drains after Plan, so the refusals of a pass reach its status this
// way; every pass that drains retries the evictions, so they are found again after a restart
// and nothing about them is kept between passes.
func (d *Decision) AddDrainRefusals(refusals map[string]string) {
	if len(refusals) == 0 {
		return
	}
	if d.DrainBlockers == nil {
		d.DrainBlockers = map[string]string{}
	}
	for node, msg := range refusals {
		if old := d.DrainBlockers[node]; old != "" {
			msg = old + "; " + msg
		}
		d.DrainBlockers[node] = msg
	}
	for i := range d.Conditions {
		if d.Conditions[i].Type == ConditionDrainBlocked {
			d.Conditions[i] = drainCondition(d.Conditions[i].ObservedGeneration, d.DrainBlockers)
		}
	}
}

// drainCondition is DrainBlocked: True naming each blocked node and what blocks it ("<node>:
// <message>", by node name, at most MaxFailuresListed), else False.
func drainCondition(generation int64, blockers map[string]string) metav1.Condition {
	if len(blockers) == 0 {
		return metav1.Condition{Type: ConditionDrainBlocked, Status: metav1.ConditionFalse, Reason: "NoDrainBlocked", ObservedGeneration: generation}
	}
	nodes := make([]string, 0, len(blockers))
	for n := range blockers {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	items := make([]string, len(nodes))
	for i, n := range nodes {
		items[i] = n + ": " + blockers[n]
	}
	return metav1.Condition{Type: ConditionDrainBlocked, Status: metav1.ConditionTrue, Reason: ReasonDrainBlocked,
		Message: listMessage(items), ObservedGeneration: generation}
}

// stalledWants lists the wanted packages whose version or config is quarantined (the key,
// "<package>@<version>" or "<package>@<version>#config-<hash>", in the wants' order); nil if
// none.
func stalledWants(wants []Want, quarantine map[string]bool) []string {
	var out []string
	for i := range wants {
		if q := quarantinedKey(quarantine, &wants[i]); q != "" {
			out = append(out, q)
		}
	}
	return out
}

// FailureMessage names each failure (at most MaxFailuresListed, then how many more).
func FailureMessage(fs []Failure) string {
	var b strings.Builder
	for i, f := range fs {
		if i == MaxFailuresListed {
			fmt.Fprintf(&b, "; and %d more", len(fs)-MaxFailuresListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.String())
	}
	return b.String()
}

func conditions(f SetFacts, d Decision, specErr error, blocked []string) []metav1.Condition {
	g := f.Generation
	cond := func(t string, s bool, reason, msg string) metav1.Condition {
		st := metav1.ConditionFalse
		if s {
			st = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, ObservedGeneration: g}
	}
	var ready, reconciling, stalled metav1.Condition
	switch {
	case specErr != nil:
		ready = cond(v1alpha1.ConditionReady, false, ReasonInvalidSpec, specErr.Error())
		reconciling = cond(v1alpha1.ConditionReconciling, false, ReasonInvalidSpec, "")
		stalled = cond(v1alpha1.ConditionStalled, true, ReasonInvalidSpec, specErr.Error())
	case f.Deleting && len(d.Failures) > 0:
		// An uninstall fails: the deletion cannot finish by itself (it retries with backoff).
		msg := "deletion blocked, uninstall failing: " + FailureMessage(d.Failures) +
			"; fix the package (its retry runs the spec recorded on the node) or set uninstallOnDelete to false to delete without uninstalling"
		ready = cond(v1alpha1.ConditionReady, false, ReasonUninstallFailed, msg)
		reconciling = cond(v1alpha1.ConditionReconciling, false, ReasonUninstallFailed, "")
		stalled = cond(v1alpha1.ConditionStalled, true, ReasonUninstallFailed, msg)
	case f.Deleting:
		ready = cond(v1alpha1.ConditionReady, false, ReasonDeleting, "uninstalling and releasing nodes")
		reconciling = cond(v1alpha1.ConditionReconciling, true, ReasonDeleting, "uninstalling and releasing nodes")
		stalled = cond(v1alpha1.ConditionStalled, false, ReasonDeleting, "")
	default:
		s := d.Status
		reason := map[Status]string{v1alpha1.StatusComplete: ReasonComplete, v1alpha1.StatusInProgress: ReasonInProgress,
			v1alpha1.StatusWaiting: ReasonWaiting, v1alpha1.StatusErroring: ReasonErroring, v1alpha1.StatusBlocked: ReasonBlocked,
			v1alpha1.StatusPaused: ReasonPaused, v1alpha1.StatusDisabled: ReasonDisabled, v1alpha1.StatusUnknown: ReasonInProgress}[s]
		msg := fmt.Sprintf("%s nodes complete", d.CompleteNodes)
		switch s {
		case v1alpha1.StatusErroring:
			msg = FailureMessage(d.Failures)
		case v1alpha1.StatusBlocked:
			msg = "stage pods do not tolerate the taints of " + listMessage(blocked)
		}
		if len(d.PausedBy) > 0 {
			reason, msg = ReasonWaitingForPausedSet, "waiting for a paused package set on "+listMessage(d.PausedBy)
		}
		// erroring and blocked are Stalled (kstatus Failed, the provider fails the apply);
		// erroring stages are still retried with backoff, and a fix heals the set.
		failed := s == v1alpha1.StatusBlocked || s == v1alpha1.StatusErroring
		ready = cond(v1alpha1.ConditionReady, s == v1alpha1.StatusComplete, reason, msg)
		work := (s == v1alpha1.StatusInProgress || s == v1alpha1.StatusWaiting || s == v1alpha1.StatusUnknown) && len(d.PausedBy) == 0
		reconciling = cond(v1alpha1.ConditionReconciling, work, reason, "")
		if work {
			reconciling.Message = msg
		}
		stalled = cond(v1alpha1.ConditionStalled, failed, reason, "")
		if failed {
			stalled.Message = msg
		}
	}
	if len(d.Stalled) > 0 && specErr == nil && !f.Deleting {
		var cfg, ver bool
		for _, q := range d.Stalled {
			c := strings.Contains(q, "#config-")
			cfg, ver = cfg || c, ver || !c
		}
		change := "the version"
		switch {
		case cfg && ver:
			change = "the version (for a #config-<hash>: the config)"
		case cfg:
			change = "the config (or the version)"
		}
		msg := "quarantined by a rollback, change " + change + " to continue: " + strings.Join(d.Stalled, ", ")
		if len(d.Failures) > 0 {
			msg += "; " + FailureMessage(d.Failures)
		}
		ready = cond(v1alpha1.ConditionReady, false, ReasonVersionQuarantined, msg)
		stalled = cond(v1alpha1.ConditionStalled, true, ReasonVersionQuarantined, msg)
		// Stalled excludes Reconciling (kstatus reads the first of them that is True).
		reconciling = cond(v1alpha1.ConditionReconciling, false, ReasonVersionQuarantined, "")
	}
	taint := cond(ConditionTaintNotTolerable, len(blocked) > 0, "TaintsTolerated", "")
	if len(blocked) > 0 {
		taint.Reason, taint.Message = ReasonBlocked, listMessage(blocked)
	}
	return []metav1.Condition{ready, reconciling, stalled, taint, drainCondition(g, d.DrainBlockers)}
}

func listMessage(items []string) string {
	if len(items) > MaxFailuresListed {
		return strings.Join(items[:MaxFailuresListed], "; ") + fmt.Sprintf("; and %d more", len(items)-MaxFailuresListed)
	}
	return strings.Join(items, "; ")
}

// nodePass runs one node's packages for one pass.
type nodePass struct {
	f       SetFacts
	n       NodeFacts
	wants   []Want
	rec     *NodeRecord
	hold    Status // non-empty: no new stage starts; the node reports this status
	granted bool
	// cordonSlots is how many more nodes may be cordoned this pass (shared by the set's nodes).
	cordonSlots *int
	plan        NodePlan
	failures    []Failure
	requeue     time.Duration
	// quarantine is the set's quarantined versions ("<package>@<version>"), shared by the
	// set's nodes: a rollback on one node adds to it for the nodes after it.
	quarantine map[string]bool
	// reverted: a package of the node was rolled back and the spec still asks for the
	// quarantined version (the node is Reverted and reports erroring).
	reverted bool
}

func (p *nodePass) want(name string) *Want {
	for i := range p.wants {
		if p.wants[i].Name == name {
			return &p.wants[i]
		}
	}
	return nil
}

// settled: the package's record matches what is wanted and its flow is done and complete (a
// flow abandoned while erroring, when the package stopped being wanted, is not).
func settled(r *PackageRecord, w *Want) bool {
	if w == nil {
		return r == nil
	}
	return r != nil && r.Done && r.State == v1alpha1.StateComplete && !r.Removing && r.Version == w.Version && maps.Equal(r.Config, w.Config)
}

func (p *nodePass) needsWork() bool {
	for i := range p.wants {
		if !settled(p.rec.Packages[p.wants[i].Name], &p.wants[i]) {
			return true
		}
	}
	for name := range p.rec.Packages {
		if p.want(name) == nil {
			return true
		}
	}
	return false
}

func (p *nodePass) run() (NodePlan, error) {
	p.plan = NodePlan{Name: p.n.Name}
	// Packages in dependency order, then records of packages no longer wanted (by name).
	names := make([]string, 0, len(p.wants)+len(p.rec.Packages))
	for _, w := range p.wants {
		names = append(names, w.Name)
	}
	var gone []string
	for name := range p.rec.Packages {
		if p.want(name) == nil {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	names = append(names, gone...)
	for name := range p.rec.Withdrawn {
		if p.want(name) == nil {
			p.unwithdraw(name) // left the spec (or the node, or the set is deleted)
		}
	}
	for _, name := range names {
		if err := p.step(name); err != nil {
			return p.plan, err
		}
	}
	if err := p.interrupts(); err != nil {
		return p.plan, err
	}
	if err := p.rollout(); err != nil {
		return p.plan, err
	}
	p.plan.Status = p.status()
	if len(p.rec.Packages) == 0 && !p.n.Cordoned && !p.n.Selected {
		p.plan.Record = nil
	} else if len(p.rec.Packages) == 0 && p.f.Deleting {
		p.plan.Record = nil
	} else {
		p.plan.Record = p.rec
	}
	if p.n.Cordoned && (p.plan.Record == nil || !p.interruptPending()) {
		p.plan.Uncordon = true
	}
	return p.plan, nil
}

// canStart: new stages may start on the node (budget granted, nothing holds it).
func (p *nodePass) canStart() bool { return p.granted && p.hold == "" }

// interruptPending: some package's current flow still has its interrupt ahead or running.
func (p *nodePass) interruptPending() bool {
	for _, r := range p.rec.Packages {
		if r.Interrupt != nil && !r.Done && r.Stage != v1alpha1.StagePostInterrupt {
			return true
		}
	}
	return false
}

// step advances one package as far as it can go this pass.
func (p *nodePass) step(name string) error {
	for guard := 0; guard < 16; guard++ {
		r := p.rec.Packages[name]
		w := p.want(name)
		if r != nil && w == nil && !r.Removing && !r.Done && r.State != v1alpha1.StateInProgress {
			r.Done = true // no longer wanted: abandon the flow (no retry), uninstall below
		}
		var again bool
		var err error
		switch {
		case r == nil || r.Done:
			again, err = p.stepIdle(name, r, w)
		case r.State == v1alpha1.StateInProgress:
			again, err = p.stepInProgress(name, r)
		case r.State == v1alpha1.StateErroring && p.rebooted(r):
			return p.stepRebootedErroring(r)
		case r.State == v1alpha1.StateErroring:
			return p.stepErroring(name, r)
		case r.State == v1alpha1.StateSkipped:
			return nil // waits for the merged interrupt (interrupts())
		case r.State == v1alpha1.StateComplete:
			again, err = p.stepComplete(name, r, w)
		default:
			return &TransitionError{"state", string(r.State), "", "unexpected state in a node record"}
		}
		if err != nil || !again {
			return err
		}
	}
	return nil
}

// stepIdle is step for a package with no record or a finished flow (r nil or Done): nothing
// when settled on the wanted version, stalled when that version is quarantined, else the start
// of its flow (again: step once more on the new record).
func (p *nodePass) stepIdle(name string, r *PackageRecord, w *Want) (again bool, err error) {
	if settled(r, w) {
		if !bytes.Equal(r.Spec, w.Spec) {
			r.Spec = w.Spec // the version's latest spec (soak checks, a later uninstall)
		}
		return false, nil
	}
	if q := p.quarantinedKeyOf(w); q != "" {
		switch {
		case r != nil && r.Reverting:
			p.reverted = true
			p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, revertedMessage(r, q)})
		case r == nil && p.rec.Withdrawn[name] != "":
			p.reverted = true
			p.failures = append(p.failures, Failure{p.n.Name, name, "",
				fmt.Sprintf("rolled back: new version %s failed and was removed; %s is quarantined", p.rec.Withdrawn[name], q)})
		}
		return false, nil // Stalled until the version (or config) changes
	}
	if !p.canStart() || !p.depsComplete(w) {
		return false, nil
	}
	if err := p.startFlow(name, r, w); err != nil {
		return false, err
	}
	if p.rec.Packages[name] == nil {
		return false, nil // removed without uninstall
	}
	return true, nil
}

// stepInProgress is step for a stage in progress: observe its Job (an interrupt: the reboot's
// proof, else completion is handled in interrupts()), revert when it failed and the policy
// says so, and step again when the stage advanced.
func (p *nodePass) stepInProgress(name string, r *PackageRecord) (again bool, err error) {
	if r.Stage == v1alpha1.StageInterrupt {
		if p.rebooted(r) {
			p.rebootDone(r) // whatever its Job says: the node came back
			return false, nil
		}
		return false, p.observe(name, r) // completion handled in interrupts()
	}
	advanced, err := p.observeAndAdvance(name, r)
	if err != nil {
		return false, err
	}
	if r.State == v1alpha1.StateErroring {
		if kind := p.revertOf(name, r); kind != revertNone {
			return false, p.revert(name, r, kind)
		}
	}
	return advanced, nil
}

// stepRebootedErroring is step for an erroring stage on a node that rebooted since it began.
// The reboot interrupt's pod was killed by the reboot it started (exit 143, or lost with the
// node) and was seen failed before the node came back: the node's boot ID changed, so the
// interrupt did its work (Skyhook #633: a successful reboot must not leave the node erroring
// and cordoned). Retry → Succeeded.
func (p *nodePass) stepRebootedErroring(r *PackageRecord) error {
	if err := p.transition(r, EventRetry); err != nil {
		return err
	}
	p.rebootDone(r)
	return nil
}

// stepErroring is step for an erroring stage: revert when the policy says so, else retry
// after the backoff (the failure is reported while it waits).
func (p *nodePass) stepErroring(name string, r *PackageRecord) error {
	if kind := p.revertOf(name, r); kind != revertNone {
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
		return p.revert(name, r, kind)
	}
	wait := backoff(r.Restarts) - p.f.Now.Sub(r.Since)
	if wait > 0 || !p.canStart() {
		if wait > 0 {
			p.requeueIn(wait)
		}
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
		return nil
	}
	if err := p.transition(r, EventRetry); err != nil {
		return err
	}
	p.createJob(name, r)
	return nil
}

// stepComplete is step for a completed stage: finish the flow (drop the record when removing),
// leave the interrupt to interrupts(), after an uninstall switch to the version to apply, and
// begin the next stage (again: step once more).
func (p *nodePass) stepComplete(name string, r *PackageRecord, w *Want) (again bool, err error) {
	next, done, err := NextStage(r.Stage, r.Interrupt != nil)
	if err != nil {
		return false, err
	}
	if done {
		r.Done = true
		if r.Removing {
			delete(p.rec.Packages, name)
			return false, nil
		}
		return true, nil
	}
	if next == v1alpha1.StageInterrupt {
		return false, nil // merged across packages in interrupts()
	}
	if r.Stage == v1alpha1.StageUninstall {
		// Downgrade: the old version is gone; apply the wanted one.
		if r.Removing || w == nil {
			delete(p.rec.Packages, name)
			return false, nil
		}
		if r.Reverting && r.Prev == nil {
			// A failed new package is uninstalled: nothing to return to.
			delete(p.rec.Packages, name)
			p.withdraw(name, r.RevertedFrom)
			return false, nil
		}
		if r.Reverting {
			r.Version, r.Image, r.Config, r.Interrupt, r.Uninstall, r.Spec = r.Prev.Version, r.Prev.Image, r.Prev.Config, r.Prev.Interrupt, r.Prev.Uninstall, r.Prev.Spec
			r.Prev = nil
		} else {
			r.Version, r.Image, r.Config, r.Interrupt, r.Uninstall, r.Spec = w.Version, w.Image, w.Config, w.Interrupt, w.Uninstall, w.Spec
		}
	}
	if !p.canStart() {
		return false, nil
	}
	p.begin(r, next)
	p.createJob(name, r)
	return true, nil
}

func (p *nodePass) requeueIn(d time.Duration) {
	if p.requeue == 0 || d < p.requeue {
		p.requeue = d
	}
}

func (p *nodePass) depsComplete(w *Want) bool {
	if w == nil {
		return true
	}
	for _, dep := range w.DependsOn {
		if !settled(p.rec.Packages[dep], p.want(dep)) {
			return false
		}
	}
	return true
}

func (p *nodePass) begin(r *PackageRecord, s Stage) {
	r.Stage, r.State, r.Restarts, r.Message, r.Since = s, "", 0, "", p.f.Now
	_ = p.transition(r, EventStarted)
}

func (p *nodePass) transition(r *PackageRecord, ev Event) error {
	next, err := Apply(r.State, ev)
	if err != nil {
		return err
	}
	if next != r.State {
		r.Since = p.f.Now
	}
	r.State = next
	return nil
}

// revertKind is what a rollback of a failed flow returns the package to (revertOf).
type revertKind int

const (
	revertNone revertKind = iota
	// revertVersion: the flow moved the package to another version (upgrade, or a downgrade
	// past its uninstall): back to Prev's version.
	revertVersion
	// revertNew: the flow installed a new package: uninstall it (enabled) and drop its record.
	revertNew
	// revertConfig: the flow changed the config only: back to Prev's config.
	revertConfig
	// revertDowngrade: the uninstall of the installed version, the first stage of a downgrade,
	// failed: re-apply the installed version.
	revertDowngrade
)

// revertOf says how a failing flow rolls back (policy rollback), revertNone when it halts
// instead (retried with backoff like policy halt): a rollback flow itself, a removal, a flow
// without anything recorded to return to (a re-apply of the same version, a record written
// before Prev/New were kept), a downgrade's uninstall when the spec no longer asks for a lower
// version (the flow then goes on to the version asked for once the uninstall passes), or a
// node that may not start stages (hold, budget).
func (p *nodePass) revertOf(name string, r *PackageRecord) revertKind {
	if p.f.OnHealthFailure != v1alpha1.HealthFailureRollback || r.Reverting || r.Removing || r.State != v1alpha1.StateErroring || !p.canStart() {
		return revertNone
	}
	switch {
	case r.New:
		return revertNew
	case r.Prev == nil:
		return revertNone
	case r.Prev.Version != r.Version:
		return revertVersion
	case r.Stage == v1alpha1.StageUninstall:
		if w := p.want(name); w != nil {
			if cmp, err := compareVersions(w.Version, r.Version); err == nil && cmp < 0 {
				return revertDowngrade
			}
		}
	case !maps.Equal(r.Prev.Config, r.Config):
		return revertConfig
	}
	return revertNone
}

// revert quarantines what failed and replaces r's failed flow with one back to what the node
// had (NixFleet rollback-and-halt, seed 001 Failed → Reverted). The node is Failed while the
// rollback flow runs and Reverted when it is done; the quarantine stalls the set (no node
// starts the failed change) until the spec changes. By kind:
//
//   - revertVersion: seed 000's downgrade flow back to r.Prev: uninstall of the failed version
//     when uninstall is enabled, then apply of the previous one, config and its interrupt if
//     it has one. Quarantine "<package>@<failed version>".
//   - revertNew (nothing to return to): uninstall of the failed version when uninstall is
//     enabled, then the record is dropped (NodeRecord.Withdrawn keeps the failed version);
//     without uninstall nothing runs and the record is dropped at once (Reverted this pass).
//     Quarantine "<package>@<failed version>".
//   - revertConfig: a config flow back to r.Prev's config (and spec): config, then the
//     interrupt the changed keys need (configInterrupts), post-interrupt. The version still
//     works, so only the failed config is quarantined: ConfigQuarantine,
//     "<package>@<version>#config-<hash>".
//   - revertDowngrade: the uninstall of the installed version failed, so that version is
//     still there in an unknown state (the uninstall may have stopped halfway): it is applied
//     again, apply → config (→ its interrupt → post-interrupt), as startFlow does for a
//     version whose flow was abandoned unfinished; a config stage alone could not be trusted
//     on a half-removed package. Quarantine "<package>@<target version>": the downgrade
//     cannot be done without that uninstall.
func (p *nodePass) revert(name string, r *PackageRecord, kind revertKind) error {
	var q, note string
	p.rec.Flows++
	nr := &PackageRecord{Flow: p.rec.Flows, Reverting: true, RevertedFrom: r.Version}
	first := v1alpha1.StageApply
	switch kind {
	case revertVersion:
		q, note = Quarantine(name, r.Version), "rolling back to "+r.Prev.Version
		prev := *r.Prev
		nr.Interrupt = prev.Interrupt
		if r.Uninstall {
			nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Prev, nr.Spec = r.Version, r.Image, r.Config, true, &prev, r.Spec
			first = v1alpha1.StageUninstall
		} else {
			nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = prev.Version, prev.Image, prev.Config, prev.Uninstall, prev.Spec
		}
	case revertNew:
		q = Quarantine(name, r.Version)
		if !r.Uninstall {
			p.noteRevert(name, q, "removing the new package (uninstall not enabled: nothing to run)")
			delete(p.rec.Packages, name)
			p.withdraw(name, r.Version)
			return nil
		}
		note = "uninstalling the new package"
		nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = r.Version, r.Image, r.Config, true, r.Spec
		first = v1alpha1.StageUninstall
	case revertConfig:
		q, note = ConfigQuarantine(name, r.Version, r.Config), "rolling back to the previous config"
		prev := *r.Prev
		nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = prev.Version, prev.Image, prev.Config, prev.Uninstall, prev.Spec
		nr.RevertedConfig = ConfigKey(r.Config)
		cis := map[string]v1alpha1.Interrupt(nil)
		if w := p.want(name); w != nil {
			cis = w.ConfigInterrupts
		}
		it, err := configInterrupt(r.Config, prev.Config, cis)
		if err != nil {
			return err
		}
		nr.Interrupt = it
		first = v1alpha1.StageConfig
	case revertDowngrade:
		w := p.want(name)
		q, note = Quarantine(name, w.Version), fmt.Sprintf("the downgrade to %s needs it: re-applying %s", w.Version, r.Version)
		prev := *r.Prev
		nr.RevertedFrom = w.Version
		nr.Version, nr.Image, nr.Config, nr.Interrupt, nr.Uninstall, nr.Spec = prev.Version, prev.Image, prev.Config, prev.Interrupt, prev.Uninstall, prev.Spec
	default:
		return fmt.Errorf("package %s: no rollback for this flow", name)
	}
	p.noteRevert(name, q, note)
	p.rec.Packages[name] = nr
	p.begin(nr, first)
	p.createJob(name, nr)
	return nil
}

// noteRevert quarantines q and adds to this pass's failures of package name what the
// rollback does.
func (p *nodePass) noteRevert(name, q, note string) {
	p.quarantine[q] = true
	for i := range p.failures {
		if f := &p.failures[i]; f.Package == name {
			f.Message += fmt.Sprintf("; %s, %s quarantined", note, q)
		}
	}
}

// withdraw records that package name's new version failed and was removed (revertNew): the
// node is Reverted and the version quarantined (the record survives a lost status write).
func (p *nodePass) withdraw(name, version string) {
	if p.rec.Withdrawn == nil {
		p.rec.Withdrawn = map[string]string{}
	}
	p.rec.Withdrawn[name] = version
	p.quarantine[Quarantine(name, version)] = true
	p.reverted = true
}

func (p *nodePass) unwithdraw(name string) {
	delete(p.rec.Withdrawn, name)
	if len(p.rec.Withdrawn) == 0 {
		p.rec.Withdrawn = nil
	}
}

// quarantinedKeyOf is the quarantine that stalls w on this pass ("" if none).
func (p *nodePass) quarantinedKeyOf(w *Want) string {
	if w == nil {
		return ""
	}
	return quarantinedKey(p.quarantine, w)
}

// revertedMessage says what a done rollback flow r did and which quarantine q (the one
// stalling the wanted package) holds the node.
func revertedMessage(r *PackageRecord, q string) string {
	if r.RevertedConfig != "" {
		return fmt.Sprintf("rolled back to the previous config of %s after config %s failed; %s is quarantined (change the config to continue)",
			r.Version, r.RevertedConfig, q)
	}
	return fmt.Sprintf("rolled back to %s after the change to %s failed; %s is quarantined", r.Version, r.RevertedFrom, q)
}

// configInterrupt merges the configInterrupts of the keys that differ between two configs
// (changed, added or removed); nil when none of them needs one.
func configInterrupt(a, b map[string]string, cis map[string]v1alpha1.Interrupt) (*v1alpha1.Interrupt, error) {
	var its []v1alpha1.Interrupt
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a[k] == b[k] {
			continue
		}
		if it, ok := cis[k]; ok {
			its = append(its, it)
		}
	}
	if len(its) == 0 {
		return nil, nil
	}
	m, _, err := MergeInterrupts(its)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// startFlow opens a new flow for a package (seed 000 / Skyhook HandleVersionChange): new →
// apply; version up → upgrade; version down → uninstall of the old (uninstall enabled), then
// apply; config change only → config (with the interrupts of the changed keys listed in
// configInterrupts); no longer wanted → uninstall (enabled) or forget. It records what a
// rollback returns to (Prev: the previous version, or the previous config of the same
// version; New for a new package) and clears the package's Withdrawn entry.
func (p *nodePass) startFlow(name string, r *PackageRecord, w *Want) error {
	p.unwithdraw(name)
	p.rec.Flows++
	nr := &PackageRecord{Flow: p.rec.Flows}
	var first Stage
	switch {
	case w == nil:
		if !r.Uninstall {
			delete(p.rec.Packages, name)
			return nil
		}
		*nr = PackageRecord{Flow: p.rec.Flows, Version: r.Version, Image: r.Image, Config: r.Config, Uninstall: true, Removing: true, Spec: r.Spec}
		first = v1alpha1.StageUninstall
	case r == nil:
		first = v1alpha1.StageApply
		nr.New = true
	default:
		cmp, err := compareVersions(w.Version, r.Version)
		if err != nil {
			return err
		}
		switch {
		case cmp > 0:
			first = v1alpha1.StageUpgrade
		case cmp < 0 && r.Uninstall:
			*nr = PackageRecord{Flow: p.rec.Flows, Version: r.Version, Image: r.Image, Config: r.Config, Uninstall: true, Interrupt: w.Interrupt, Spec: r.Spec}
			first = v1alpha1.StageUninstall
		case cmp < 0:
			first = v1alpha1.StageApply
		case r.State != v1alpha1.StateComplete:
			// The same version again after its flow was abandoned unfinished: apply it anew
			// (what a rollback returns to is still what the abandoned flow had).
			first = v1alpha1.StageApply
			nr.New, nr.Prev = r.New, r.Prev.clone()
		default:
			first = v1alpha1.StageConfig
			nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = w.Version, w.Image, w.Config, w.Uninstall, w.Spec
			it, err := configInterrupt(w.Config, r.Config, w.ConfigInterrupts)
			if err != nil {
				return err
			}
			nr.Interrupt = it
			// What a failed config change rolls back to: this version with its config.
			nr.Prev = &Applied{Version: r.Version, Image: r.Image, Config: maps.Clone(r.Config), Interrupt: r.Interrupt, Uninstall: r.Uninstall, Spec: r.Spec}
		}
	}
	if nr.Version == "" {
		nr.Version, nr.Image, nr.Config, nr.Interrupt, nr.Uninstall, nr.Spec = w.Version, w.Image, w.Config, w.Interrupt, w.Uninstall, w.Spec
	}
	if w != nil && r != nil && !r.Removing && r.Version != w.Version {
		nr.Prev = &Applied{Version: r.Version, Image: r.Image, Config: maps.Clone(r.Config), Interrupt: r.Interrupt, Uninstall: r.Uninstall, Spec: r.Spec}
	}
	p.rec.Packages[name] = nr
	p.begin(nr, first)
	p.createJob(name, nr)
	return nil
}

func compareVersions(a, b string) (int, error) {
	va, err := semver.Parse(a)
	if err != nil {
		return 0, fmt.Errorf("version %q: %w", a, err)
	}
	vb, err := semver.Parse(b)
	if err != nil {
		return 0, fmt.Errorf("version %q: %w", b, err)
	}
	return va.Compare(vb), nil
}

func (p *nodePass) jobName(name string, r *PackageRecord) string {
	return JobName(p.f.Name, p.n.Name, name, r.Flow, r.Stage, r.Restarts)
}

func (p *nodePass) createJob(name string, r *PackageRecord) {
	jn := p.jobName(name, r)
	if _, exists := p.n.Jobs[jn]; exists {
		return
	}
	for _, j := range p.plan.Jobs {
		if j.Name == jn {
			return
		}
	}
	timeout := DefaultStageTimeout
	if w := p.want(name); w != nil {
		timeout = w.StageTimeout
	}
	js := JobSpec{Name: jn, Node: p.n.Name, Package: name, Version: r.Version, Image: r.Image, Stage: r.Stage, Timeout: timeout, Spec: r.Spec}
	if r.Stage == v1alpha1.StageInterrupt {
		js.Interrupt = r.Interrupt
	}
	p.plan.Jobs = append(p.plan.Jobs, js)
}

// observe reads the Job of an in_progress stage: succeeded → complete; failed or image pull
// error → erroring (restarts+1; a stuck pull's Job is deleted); missing → create it.
func (p *nodePass) observe(name string, r *PackageRecord) error {
	jn := p.jobName(name, r)
	j, ok := p.n.Jobs[jn]
	switch {
	case !ok:
		p.createJob(name, r)
	case j.Succeeded:
		return p.transition(r, EventSucceeded)
	case j.Failed || j.ImagePullError:
		if err := p.transition(r, EventFailed); err != nil {
			return err
		}
		r.Restarts++
		r.Message = strings.TrimSpace(j.Reason + ": " + j.Message)
		if j.ImagePullError {
			p.plan.DeleteJobs = append(p.plan.DeleteJobs, jn)
		}
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
		p.requeueIn(backoff(r.Restarts))
	}
	return nil
}

func (p *nodePass) observeAndAdvance(name string, r *PackageRecord) (bool, error) {
	if err := p.observe(name, r); err != nil {
		return false, err
	}
	return r.State == v1alpha1.StateComplete, nil
}

// DrainMatters says whether a pass over a cordoned node with record rec may read
// NodeFacts.Drained (interrupts below): only while some package's interrupt is still ahead
// (at stage config) and none runs yet. Once the interrupt Job runs or has run, the
// controller need not list the node's pods to fill Drained in. Drained false is always
// safe to report: the pass drains (again) and the next pass looks.
func DrainMatters(rec *NodeRecord) bool {
	if rec == nil {
		return false
	}
	ahead := false
	for _, r := range rec.Packages {
		if r.Interrupt == nil || r.Done {
			continue
		}
		switch r.Stage {
		case v1alpha1.StageInterrupt:
			return false
		case v1alpha1.StageConfig:
			ahead = true
		}
	}
	return ahead
}

// interrupts runs the node's merged interrupt once every package whose flow has one is at
// config complete (Deferred) and no other stage of the set runs on the node: cordon (budget:
// the node is in flight), wait for its non-interrupt pods, drain, then one interrupt Job for the highest-ranked interrupt, the
// others skipped; on its success all of them complete and go on to post-interrupt.
func (p *nodePass) interrupts() error {
	ready, running, reached := p.interruptCandidates()
	if !reached {
		return nil // some package has not reached its interrupt yet
	}
	if len(running) > 0 {
		return p.runningInterrupt(running)
	}
	if len(ready) == 0 || !p.readyToInterrupt() {
		return nil
	}
	return p.startInterrupt(ready)
}

// interruptCandidates sorts the packages with an interrupt and an unfinished flow: ready (config
// complete, waiting for the interrupt) and running (in the interrupt stage). reached is false
// when one of them has not reached its interrupt yet.
func (p *nodePass) interruptCandidates() (ready, running []string, reached bool) {
	for _, name := range p.sortedRecords() {
		r := p.rec.Packages[name]
		if r.Interrupt == nil || r.Done {
			continue
		}
		switch {
		case r.Stage == v1alpha1.StageConfig && r.State == v1alpha1.StateComplete:
			ready = append(ready, name)
		case r.Stage == v1alpha1.StageInterrupt:
			running = append(running, name)
		case r.Stage == v1alpha1.StagePostInterrupt:
		default:
			return nil, nil, false
		}
	}
	return ready, running, true
}

// runningInterrupt follows the merged interrupt in flight (running: the packages in the
// interrupt stage, the winner runs the Job, the others are skipped): when the winner completes
// every one of them moves on to post-interrupt; when the winner's flow was rolled back, the
// skipped ones go back to config complete.
func (p *nodePass) runningInterrupt(running []string) error {
	var winner *PackageRecord
	var winnerName string
	for _, name := range running {
		if r := p.rec.Packages[name]; r.State != v1alpha1.StateSkipped {
			winner, winnerName = r, name
		}
	}
	if winner == nil {
		// The winner's flow was rolled back: the skipped ones wait at config complete
		// again and merge into the next interrupt.
		for _, name := range running {
			r := p.rec.Packages[name]
			r.Stage, r.State, r.Since = v1alpha1.StageConfig, v1alpha1.StateComplete, p.f.Now
		}
		return nil
	}
	if winner.State == v1alpha1.StateInProgress {
		if p.rebooted(winner) {
			p.rebootDone(winner) // whatever its pod says: the node came back
		} else if err := p.observe(winnerName, winner); err != nil {
			return err
		}
	}
	if winner.State == v1alpha1.StateErroring {
		return nil // retried with backoff by step()
	}
	if winner.State != v1alpha1.StateComplete {
		return nil
	}
	for _, name := range running {
		r := p.rec.Packages[name]
		if r.State == v1alpha1.StateSkipped {
			if err := p.transition(r, EventPromoted); err != nil {
				return err
			}
		}
		p.begin(r, v1alpha1.StagePostInterrupt)
		p.createJob(name, r)
	}
	return nil
}

// readyToInterrupt says whether the node may be interrupted now: no other stage of the set runs
// or errors on it, a start is allowed, and it is cordoned (else it plans a cordon within the
// cordon slots) and drained (else it plans the drain once the non-interrupt pods are gone).
func (p *nodePass) readyToInterrupt() bool {
	for _, r := range p.rec.Packages {
		if r.State == v1alpha1.StateInProgress || r.State == v1alpha1.StateErroring {
			return false // wait for the set's other stages on the node (Skyhook HasRunningPackages)
		}
	}
	if !p.canStart() {
		return false
	}
	if !p.n.Cordoned {
		if *p.cordonSlots > 0 {
			*p.cordonSlots--
			p.plan.Cordon = true
		}
		return false
	}
	if len(p.n.NonInterrupt) > 0 {
		return false // the non-interrupt pods finish before the drain starts
	}
	if !p.n.Drained {
		p.plan.Drain = true
		return false
	}
	return true
}

// startInterrupt merges the ready packages' interrupts into one (reboot > restart-all-services >
// service > noop) and starts it: the winner runs the merged interrupt's Job, the others are
// skipped. Errors: an illegal transition or an interrupt MergeInterrupts rejects.
func (p *nodePass) startInterrupt(ready []string) error {
	its := make([]v1alpha1.Interrupt, len(ready))
	for i, name := range ready {
		its[i] = *p.rec.Packages[name].Interrupt
	}
	merged, win, err := MergeInterrupts(its)
	if err != nil {
		return err
	}
	for i, name := range ready {
		r := p.rec.Packages[name]
		r.Stage, r.State, r.Restarts, r.Message = v1alpha1.StageInterrupt, "", 0, ""
		if i == win {
			if err := p.transition(r, EventStarted); err != nil {
				return err
			}
			m := merged
			r.Interrupt = &m
			if m.Type == v1alpha1.InterruptReboot {
				r.BootID = p.n.BootID
			}
			p.createJob(name, r)
		} else if err := p.transition(r, EventSkipped); err != nil {
			return err
		}
	}
	return nil
}

// rebooted: r is the running (or failed) reboot interrupt and the node has booted since it
// started (its boot ID differs from the one recorded then). A node that reports no boot ID
// cannot be told to have rebooted: its interrupt counts only by its Job's outcome.
func (p *nodePass) rebooted(r *PackageRecord) bool {
	return r.Stage == v1alpha1.StageInterrupt && r.Interrupt != nil && r.Interrupt.Type == v1alpha1.InterruptReboot &&
		r.BootID != "" && p.n.BootID != "" && p.n.BootID != r.BootID
}

// rebootDone completes a reboot interrupt the node's new boot ID proves done (seed 000
// Succeeded from in_progress); the message says so until post-interrupt starts.
func (p *nodePass) rebootDone(r *PackageRecord) {
	_ = p.transition(r, EventSucceeded) // in_progress → complete is always legal
	r.Message = fmt.Sprintf("node rebooted (boot ID %s → %s)", r.BootID, p.n.BootID)
	r.BootID = ""
}

func (p *nodePass) sortedRecords() []string {
	names := make([]string, 0, len(p.rec.Packages))
	for n := range p.rec.Packages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// rollout derives the node's seed-001 state from its packages and records the transition
// (validated by RolloutTransition; Pending/Failed pass through Activating where the seed
// requires it).
func (p *nodePass) rollout() error {
	var target v1alpha1.RolloutState
	erroring, deferred, active, reverting := false, false, false, false
	for _, r := range p.rec.Packages {
		switch {
		case r.Reverting && !r.Done:
			reverting = true
		case r.State == v1alpha1.StateErroring:
			erroring = true
		case r.Interrupt != nil && !r.Done && (r.Stage == v1alpha1.StageInterrupt || r.Stage == v1alpha1.StagePostInterrupt ||
			r.Stage == v1alpha1.StageConfig && r.State == v1alpha1.StateComplete):
			deferred = true
		case !r.Done:
			active = true
		}
	}
	work := p.needsWork()
	prev := p.rec.Rollout
	switch {
	case erroring || reverting:
		target = v1alpha1.RolloutFailed
	case p.reverted && !active && !deferred:
		target = v1alpha1.RolloutReverted
	case active:
		target = v1alpha1.RolloutActivating
	case deferred:
		target = v1alpha1.RolloutDeferred
	case work:
		target = v1alpha1.RolloutPending
		if prev == v1alpha1.RolloutFailed {
			target = v1alpha1.RolloutActivating // a retried flow whose next stage has not started
		}
		if InFlight(prev) && prev != v1alpha1.RolloutFailed {
			target = prev // between stages in the same pass (e.g. waiting on a dependency)
		}
	default:
		switch prev {
		case "", v1alpha1.RolloutPending, v1alpha1.RolloutConverged, v1alpha1.RolloutReverted:
			// Nothing ran in this rollout: a Reverted node the spec now asks to stay where the
			// rollback left it converges (Reverted → Pending → Converged) without soaking
			// again, and without taking a budget slot it was not granted.
			target = v1alpha1.RolloutConverged
		case v1alpha1.RolloutSoaking:
			target = p.soak()
		default:
			target = v1alpha1.RolloutConverged
			if p.f.Soak > 0 {
				// Entering Soaking: the window and its round 0 start now.
				p.rec.Since, p.rec.SoakRound = p.f.Now, 0
				target = p.soak()
			}
		}
	}
	return p.walk(prev, target)
}

type soakResult int

const (
	soakRunning soakResult = iota
	soakPassed
	soakFailed
)

// soak runs the soak window of a node whose stages are done (seed 001 Soaking: "probes have
// started; soak window has not yet elapsed"; Converged: "soak elapsed, probes passing"). The
// check of every package's last stage is re-run as Jobs (JobSpec.SoakCheck) in rounds: round
// k starts SoakRoundStart(k) after the node began Soaking (record Since): round 0 at once,
// then every SoakInterval, the last round (SoakRounds) when the window ends. One round runs
// at a time (all of a round's Jobs passed before the next starts); a round missed while the
// reconciler was away is skipped (the next round is the latest one due). The round under way
// is the record's SoakRound, so its Job names (SoakJobName with the round) come from the
// record and Now alone: a restarted reconciler never creates a round's Job twice. Result:
// Converged once the last round (started at the window's end) passed; Failed when a check of
// any round fails (soakRound: that package is erroring and the policy applies); otherwise
// Soaking (a round running or the next one not due yet; requeued for it).
func (p *nodePass) soak() v1alpha1.RolloutState {
	iv := SoakInterval(p.f.Soak, p.f.SoakInterval)
	last := SoakRounds(p.f.Soak, iv)
	elapsed := p.f.Now.Sub(p.rec.Since)
	k := min(p.rec.SoakRound, last) // a shortened window ends at its new last round
	for {
		p.rec.SoakRound = k
		if due := SoakRoundStart(k, p.f.Soak, iv); elapsed < due {
			p.requeueIn(due - elapsed)
			return v1alpha1.RolloutSoaking
		}
		switch p.soakRound(k, last) {
		case soakFailed:
			return v1alpha1.RolloutFailed
		case soakRunning:
			p.requeueIn(Poll)
			return v1alpha1.RolloutSoaking
		}
		if k >= last {
			return v1alpha1.RolloutConverged
		}
		for k++; k < last && SoakRoundStart(k+1, p.f.Soak, iv) <= elapsed; k++ {
		}
	}
}

// soakRound creates or reads round k's check Jobs (one per package whose flow is done): all
// passed → soakPassed; one failed → that package's last stage is erroring again with the
// check's message, naming the round (soakFailed: the node is Failed and the policy applies:
// halt retries the stage with backoff, rollback reverts); otherwise soakRunning.
func (p *nodePass) soakRound(k, last int) soakResult {
	res := soakPassed
	for _, name := range p.sortedRecords() {
		r := p.rec.Packages[name]
		if !r.Done || r.Removing {
			continue
		}
		jn := SoakJobName(p.f.Name, p.n.Name, name, r.Flow, r.Restarts, k)
		j, ok := p.n.Jobs[jn]
		switch {
		case !ok:
			timeout := DefaultStageTimeout
			if w := p.want(name); w != nil {
				timeout = w.StageTimeout
			}
			p.plan.Jobs = append(p.plan.Jobs, JobSpec{Name: jn, Node: p.n.Name, Package: name, Version: r.Version, Image: r.Image,
				Stage: r.Stage, Timeout: timeout, SoakCheck: true, SoakRound: k, Spec: r.Spec})
			res = min(res, soakRunning)
		case j.Failed || j.ImagePullError:
			r.Done, r.State, r.Since = false, v1alpha1.StateErroring, p.f.Now
			r.Restarts++
			r.Message = strings.TrimSpace(fmt.Sprintf("soak check %s failed in round %d/%d: %s: %s", CheckOf(r.Stage), k, last, j.Reason, j.Message))
			if j.ImagePullError {
				p.plan.DeleteJobs = append(p.plan.DeleteJobs, jn)
			}
			p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
			p.requeueIn(backoff(r.Restarts))
			return soakFailed
		case !j.Succeeded:
			res = min(res, soakRunning)
		}
	}
	return res
}

// walk moves the rollout state from prev to target through the seed's table, inserting the
// intermediate states the table requires (""→Pending, Pending/Failed→Activating,
// Activating/Deferred→Soaking→Converged with no soak).
func (p *nodePass) walk(prev, target v1alpha1.RolloutState) error {
	cur := prev
	for i := 0; cur != target && i < 5; i++ {
		next := target
		if RolloutTransition(cur, target) != nil {
			switch {
			case target == v1alpha1.RolloutReverted && (cur == v1alpha1.RolloutActivating || cur == v1alpha1.RolloutDeferred || cur == v1alpha1.RolloutSoaking):
				next = v1alpha1.RolloutFailed // rolled back within the pass that saw the failure
			case cur == "" || cur == v1alpha1.RolloutConverged || cur == v1alpha1.RolloutReverted || cur == v1alpha1.RolloutSoaking:
				next = v1alpha1.RolloutPending // a spec change opens a new rollout
			case cur == v1alpha1.RolloutPending || cur == v1alpha1.RolloutFailed:
				next = v1alpha1.RolloutActivating
			case cur == v1alpha1.RolloutActivating || cur == v1alpha1.RolloutDeferred:
				next = v1alpha1.RolloutSoaking
			default:
				return RolloutTransition(cur, target)
			}
		}
		if err := RolloutTransition(cur, next); err != nil {
			return err
		}
		cur = next
		p.rec.Since = p.f.Now
	}
	if cur != target {
		return RolloutTransition(cur, target)
	}
	p.rec.Rollout = cur
	if cur != v1alpha1.RolloutSoaking {
		p.rec.SoakRound = 0
	}
	return nil
}

// status is the node's seed-000 status: a hold (blocked, disabled, paused, waiting) first, then
// from the package states: any erroring → erroring, any in progress → in_progress, all
// settled → complete, otherwise waiting (queued for the budget).
func (p *nodePass) status() Status {
	if p.hold != "" && (p.hold != v1alpha1.StatusWaiting || p.needsWork()) {
		for _, r := range p.rec.Packages {
			if r.State == v1alpha1.StateInProgress {
				return v1alpha1.StatusInProgress // stages that were running finish
			}
		}
		return p.hold
	}
	erroring, progress := false, false
	for _, r := range p.rec.Packages {
		switch r.State {
		case v1alpha1.StateErroring:
			erroring = true
		case v1alpha1.StateInProgress, v1alpha1.StateSkipped:
			progress = true
		case v1alpha1.StateComplete:
			if !r.Done {
				progress = true
			}
		}
	}
	switch {
	case erroring:
		return v1alpha1.StatusErroring
	case progress || len(p.plan.Jobs) > 0 || p.plan.Cordon || p.plan.Drain:
		return v1alpha1.StatusInProgress
	case p.reverted:
		return v1alpha1.StatusErroring
	case !p.needsWork():
		if p.rec.Rollout == v1alpha1.RolloutSoaking {
			return v1alpha1.StatusInProgress
		}
		return v1alpha1.StatusComplete
	}
	return v1alpha1.StatusWaiting
}

// statusCount is how many of statuses are s.
func statusCount(statuses []Status, s Status) int {
	n := 0
	for _, x := range statuses {
		if x == s {
			n++
		}
	}
	return n
}
