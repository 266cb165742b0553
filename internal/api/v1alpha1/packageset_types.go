package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageSetStatusValue is the one-word summary of a PackageSet (status.status) and of each of
// its nodes (status.nodeStatus). Values and meanings are Skyhook's "Status" table (Skyhook
// docs/operator-status-definitions.md), spelt as Skyhook spells them.
// +kubebuilder:validation:Enum=complete;blocked;waiting;disabled;paused;in_progress;erroring;unknown
type PackageSetStatusValue string

const (
	// StatusComplete: all operations finished successfully.
	StatusComplete PackageSetStatusValue = "complete"
	// StatusBlocked: prevented from proceeding because the node's taints are not tolerated.
	StatusBlocked PackageSetStatusValue = "blocked"
	// StatusWaiting: queued but not started (a set of lower priority number is not complete
	// on the node yet, or the interruption budget has no room).
	StatusWaiting PackageSetStatusValue = "waiting"
	// StatusDisabled: this set is skipped; later sets continue.
	StatusDisabled PackageSetStatusValue = "disabled"
	// StatusPaused: this set and every later set on its nodes are stopped.
	StatusPaused PackageSetStatusValue = "paused"
	// StatusInProgress: stages are running.
	StatusInProgress PackageSetStatusValue = "in_progress"
	// StatusErroring: a stage failed (its pod failed, image cannot be pulled, stage timeout).
	StatusErroring PackageSetStatusValue = "erroring"
	// StatusUnknown: cannot be determined (not reconciled yet, or mixed).
	StatusUnknown PackageSetStatusValue = "unknown"
)

// PackageState is the execution state of one package's current stage on one node (Skyhook's
// "State" table).
// +kubebuilder:validation:Enum=complete;in_progress;skipped;erroring;unknown
type PackageState string

const (
	StateComplete   PackageState = "complete"
	StateInProgress PackageState = "in_progress"
	StateSkipped    PackageState = "skipped"
	StateErroring   PackageState = "erroring"
	StateUnknown    PackageState = "unknown"
)

// PackageStage is the lifecycle stage a package is in on a node (Skyhook's "Stage" table; each
// stage but interrupt runs with its check, e.g. apply then apply-check). uninstall-interrupt is
// NodeWright's StageUninstallInterrupt: the package's interrupt run after its uninstall stage.
// +kubebuilder:validation:Enum=uninstall;apply;config;upgrade;interrupt;post-interrupt;uninstall-interrupt
type PackageStage string

const (
	StageUninstall     PackageStage = "uninstall"
	StageApply         PackageStage = "apply"
	StageConfig        PackageStage = "config"
	StageUpgrade       PackageStage = "upgrade"
	StageInterrupt     PackageStage = "interrupt"
	StagePostInterrupt PackageStage = "post-interrupt"
	// StageUninstallInterrupt runs the package's interrupt after its uninstall stage completed
	// (NodeWright's StageUninstallInterrupt); no check follows it.
	StageUninstallInterrupt PackageStage = "uninstall-interrupt"
)

// RolloutState is a node's rollout state for one PackageSet: NixFleet's HostRolloutState
// (NixFleet RFC-0005 §3), spelt as NixFleet spells it.
// +kubebuilder:validation:Enum=Pending;Activating;Deferred;Soaking;Converged;Failed;Reverted
type RolloutState string

const (
	// RolloutPending: the node's change is queued (not started: waiting for the budget, an
	// earlier set or the user).
	RolloutPending RolloutState = "Pending"
	// RolloutActivating: stages are running on the node.
	RolloutActivating RolloutState = "Activating"
	// RolloutDeferred: the change is applied up to config and waits for its interrupt.
	RolloutDeferred RolloutState = "Deferred"
	// RolloutSoaking: all stages done; the soak window has not elapsed yet (with no window:
	// the health checks' single round has not passed yet).
	RolloutSoaking RolloutState = "Soaking"
	// RolloutConverged: soak elapsed with a passing check; current == declared.
	RolloutConverged RolloutState = "Converged"
	// RolloutFailed: a stage or the soak check failed.
	RolloutFailed RolloutState = "Failed"
	// RolloutReverted: rolled back to the previous version after a failure (policy rollback).
	RolloutReverted RolloutState = "Reverted"
)

// InterruptType is what a package needs done to the node after its config stage.
// Source: Skyhook Package.interrupt.type.
// +kubebuilder:validation:Enum=service;reboot;noop;restartAllServices
type InterruptType string

const (
	InterruptService            InterruptType = "service"
	InterruptReboot             InterruptType = "reboot"
	InterruptNoop               InterruptType = "noop"
	InterruptRestartAllServices InterruptType = "restartAllServices"
)

// HealthFailurePolicy says what a rollout does when a node fails (NixFleet
// onHealthFailure: halt, rollback-and-halt).
// +kubebuilder:validation:Enum=halt;rollback
type HealthFailurePolicy string

const (
	HealthFailureHalt     HealthFailurePolicy = "halt"
	HealthFailureRollback HealthFailurePolicy = "rollback"
)

// Sequencing is spec.sequencing.
type Sequencing string

const (
	// SequencingNode: a node goes on to later sets once this set is complete on it.
	SequencingNode Sequencing = "node"
	// SequencingAll: no node starts a later set until this set is complete on all its nodes.
	SequencingAll Sequencing = "all"
)

// DefaultPackageSetPriority is spec.priority when unset (Skyhook: 200).
const DefaultPackageSetPriority int32 = 200

// Node annotation keys of a PackageSet named <set> (per-node state, the source of truth;
// status is derived from it). Source: Skyhook skyhook.nvidia.com/{nodeState,status,cordon}_<skyhook>.
const (
	// AnnotationNodeStatePrefix + <set>: JSON packageset.NodeRecord (packages, rollout state).
	AnnotationNodeStatePrefix = "gantry.dev/state_"
	// AnnotationNodeStatusPrefix + <set>: the node's status value for the set.
	AnnotationNodeStatusPrefix = "gantry.dev/status_"
	// AnnotationCordonPrefix + <set>: "true" while the set holds the node's cordon, or
	// CordonOperator when the node was already cordoned by someone else. The node is
	// uncordoned only when no gantry.dev/cordon_* annotation remains and none of them said
	// CordonOperator: a node cordoned by hand stays cordoned.
	AnnotationCordonPrefix = "gantry.dev/cordon_"
	// CordonOperator is the AnnotationCordonPrefix value of a set that found its node already
	// unschedulable (cordoned by an operator, not by a set): releasing it leaves the node cordoned.
	CordonOperator = "operator"
	// AnnotationPause on a PackageSet set to "true" pauses it like spec.paused, without
	// touching the spec a configuration owns (Skyhook's CLI pauses a Skyhook the same way, with
	// an annotation): `kubectl annotate packageset <name> gantry.dev/pause=true` stops a rollout,
	// the gantry_package_set_resume action (or removing the annotation) resumes it.
	AnnotationPause = "gantry.dev/pause"
	// AnnotationClearQuarantine on a PackageSet lifts quarantines a rollback left: its value is
	// a comma-separated list of keys as status.quarantinedVersions lists them
	// ("<package>@<version>" or "<package>@<version>#config-<hash>"). The reconciler drops
	// them from status and from the nodes' records, so the next flow tries that version (or
	// config) again, then removes the annotation; a key whose rollback is still running on a
	// node stays in the annotation until that rollback is done. The
	// gantry_package_set_clear_quarantine action writes it; `kubectl annotate packageset
	// <name> gantry.dev/clear-quarantine=<key>` does the same.
	AnnotationClearQuarantine = "gantry.dev/clear-quarantine"
	// AnnotationAutoTaint is on a node the reconciler gave the runtime-required taint
	// (spec.autoTaintNewNodes, or again when the node re-gates after a reboot outside Gantry:
	// packages[].reapplyOnReboot): the taint it added ("key=value:Effect"). Like Skyhook's
	// autoTaint_<taintKey>, it keeps the node from counting as new again.
	AnnotationAutoTaint = "gantry.dev/auto-taint"
	// AnnotationRuntimeRequiredCordon marks a node cordoned when its runtime-required taint was
	// removed (spec.runtimeRequiredCordonAfter); its value names the set that asked. While it is
	// there, no set's cordon release makes the node schedulable (NodeWright's
	// runtimeRequiredCordon annotation).
	AnnotationRuntimeRequiredCordon = "gantry.dev/runtime-required-cordon"
	// DefaultRuntimeRequiredTaint is the runtime-required taint ("key=value:Effect") nodes carry
	// until every runtimeRequired set selecting them is complete there (Skyhook's default is
	// skyhook.nvidia.com=runtime-required:NoSchedule); the reconciler's
	// --runtime-required-taint flag replaces it.
	DefaultRuntimeRequiredTaint = "gantry.dev/runtime-required=true:NoSchedule"
	// AnnotationAdoptFromSkyhook on a PackageSet names the Skyhook (NVIDIA Skyhook /
	// NodeWright) it replaces: on each node it selects, a package the node has no record of is
	// recorded complete, without running a stage, when the node's Skyhook state
	// (SkyhookNodeStatePrefix + that name) says Skyhook completed the same package at the same
	// version (packageset.AdoptSkyhook). gantry_package_set's adopt_from_skyhook writes it;
	// `terraform query` with `from = "skyhook"` generates it.
	AnnotationAdoptFromSkyhook = "gantry.dev/adopt-from-skyhook"
	// SkyhookNodeStatePrefix + <skyhook> is Skyhook's per-node state annotation: JSON of
	// "<package>|<version>" → {name, version, image, stage, state, restarts} (Skyhook's
	// v1alpha1.NodeState), read when a set adopts from that Skyhook.
	SkyhookNodeStatePrefix = "skyhook.nvidia.com/nodeState_"
	// LabelPackageSet is on every stage Pod: the PackageSet's name.
	LabelPackageSet = "gantry.dev/package-set"
	// LabelPackage, LabelStage and LabelNode are on every stage Pod.
	LabelPackage = "gantry.dev/package"
	LabelStage   = "gantry.dev/stage"
	LabelNode    = "gantry.dev/node"
)

// PackageSet installs packages on the nodes its selector picks, running each package's
// lifecycle stages (as Skyhook does) as Pods bound to each node, honouring interrupts, an
// interruption budget, priority ordering, pause/disable and a soak/rollback rollout (as NixFleet does).
// Modelled on NVIDIA Skyhook (NodeWright) and NixFleet.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=pkgset,categories=gantry
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Complete",type=string,JSONPath=`.status.completeNodes`
// +kubebuilder:printcolumn:name="In-Progress",type=integer,JSONPath=`.status.nodesInProgress`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Omitted",type=integer,JSONPath=`.status.nodesOmitted`,priority=1
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.status.currentWave`,priority=1
// +kubebuilder:printcolumn:name="Tainted",type=integer,JSONPath=`.status.runtimeRequiredNodes`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40",message="metadata.name must be at most 40 characters (it names node annotations gantry.dev/state_<name>)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label: lower-case letters, digits and '-'"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.after) || !(self.metadata.name in self.spec.after)",fieldPath=".spec.after",message="spec.after cannot name the set itself: it would wait for itself"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.afterConverged) || !self.spec.afterConverged.exists(e, e.name == self.metadata.name)",fieldPath=".spec.afterConverged",message="spec.afterConverged cannot name the set itself: it would wait for itself"
type PackageSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageSetSpec   `json:"spec"`
	Status PackageSetStatus `json:"status,omitempty"`
}

// PackageSetSpec is the desired state of a PackageSet.
// +kubebuilder:validation:XValidation:rule="self.packages.all(p, !has(p.dependsOn) || p.dependsOn.all(d, self.packages.exists(q, q.name == d && q.version == p.dependsOn[d])))",message="dependsOn must name another package of this set at its version (name: version)"
// +kubebuilder:validation:XValidation:rule="self.packages.all(p, !has(p.dependsOn) || !(p.name in p.dependsOn))",message="a package cannot depend on itself"
// +kubebuilder:validation:XValidation:rule="!has(self.deploymentPolicy) || !has(self.interruptionBudget)",message="deploymentPolicy and interruptionBudget exclude each other: set budgets in the policy (default.budget, compartments[].budget)"
// +kubebuilder:validation:XValidation:rule="self.packages.all(p, !has(p.dependsOn) || p.dependsOn.all(d, self.packages.all(q, q.name != d || !has(q.dependsOn) || !(p.name in q.dependsOn))))",message="dependsOn forms a cycle of two packages"
// +kubebuilder:validation:XValidation:rule="!has(self.autoTaintNewNodes) || !self.autoTaintNewNodes || (has(self.runtimeRequired) && self.runtimeRequired)",message="spec.autoTaintNewNodes needs spec.runtimeRequired = true (the taint it adds is the runtime-required one)"
// +kubebuilder:validation:XValidation:rule="!has(self.runtimeRequiredCordonAfter) || !self.runtimeRequiredCordonAfter || (has(self.runtimeRequired) && self.runtimeRequired)",message="spec.runtimeRequiredCordonAfter needs spec.runtimeRequired = true (the cordon comes when the runtime-required taint goes)"
type PackageSetSpec struct {
	// NodeSelector picks the nodes the packages go on. An empty selector picks every node.
	// matchExpressions operators are In and NotIn (with values) or Exists and DoesNotExist
	// (without); matchLabels keys are label keys (optional DNS-subdomain prefix and '/', then a
	// name of at most 63 characters) and values at most 63 characters.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn'] ? (has(r.values) && size(r.values) > 0) : (!has(r.values) || size(r.values) == 0))",message="matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="matchLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, !k.contains('/') || k.matches('^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/'))",message="matchLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(self.matchLabels[k]) <= 63)",message="matchLabels values must be label values of at most 63 characters"
	// +optional
	NodeSelector metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// Packages, in the user's order (ties in dependency order are broken by this order).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Packages []Package `json:"packages"`

	// Sequencing is how sets after this one (higher priority number) wait for it, as
	// NodeWright's sequencing: node (the default) lets a node go on to later sets once this set
	// is complete on it; all holds every node of every later set until this set is complete on
	// all the nodes it selects (a global gate).
	// +kubebuilder:validation:Enum=node;all
	// +kubebuilder:default=node
	// +optional
	Sequencing Sequencing `json:"sequencing,omitempty"`

	// Serial runs this set's packages one at a time on each node, as Skyhook's serial: a
	// package's flow (apply or upgrade through config and interrupt, or an uninstall) starts on
	// a node only when no other package of the set has a flow unfinished there, even when the
	// packages do not depend on each other. Unset (false): independent packages run side by
	// side. Nodes still go in parallel, within the budget.
	// +optional
	Serial bool `json:"serial,omitempty"`

	// After names package sets that must be complete on a node before this set starts there,
	// whatever their priority (NixFleet's edges between deployments); a set named here that
	// does not select the node does not hold it. Entries are PackageSet names (DNS-1123
	// labels of at most 40 characters), each at most once, never the set's own name (refused by
	// the CRD); two sets naming each other are an invalid spec (Stalled).
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=40
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	After []string `json:"after,omitempty"`

	// AfterConverged names package sets that must be converged (complete on every node they
	// select, for their current generation) before this set starts any node, as NixFleet's
	// channelEdges ("the before channel converges before a new rollout opens on the after
	// channel", RFC-0005 §6): a set-wide gate, where After waits per node. A named set that
	// does not exist, is disabled or being deleted, or has no history (never reconciled and no
	// node carries its record) does not hold; a named set that is halted (erroring, blocked,
	// Stalled: a quarantined version, a refused release), paused or still rolling out holds,
	// and status.afterConvergedWaits and the Ready condition's message name it and the reason.
	// Nodes already in flight finish. Sets whose After and AfterConverged edges form a cycle
	// are an invalid spec (Stalled). At most 16 entries, each name once, never the set's own.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	AfterConverged []ConvergedEdge `json:"afterConverged,omitempty"`

	// Priority orders sets per node: lower first, ties by name (Skyhook: min 1, default 200).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=200
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// Paused stops this set and every set after it on its nodes (running stages finish).
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Disabled skips this set; sets after it continue.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// UninstallOnDelete: when the set is deleted, run the uninstall stages of the packages
	// that enable them (unset: true). false deletes the set without running any stage: the
	// node records and the set's cordons are removed and the packages stay installed. It is
	// read while the set is being deleted, so setting it to false lets a deletion blocked by
	// a failing uninstall finish.
	// +optional
	UninstallOnDelete *bool `json:"uninstallOnDelete,omitempty"`

	// InterruptionBudget bounds how many nodes are in flight (stages running, interrupted or
	// soaking) at once: exactly one of percent or count. Unset: every selected node at once,
	// as Skyhook (100%); set count = 1 to go one node at a time.
	// +optional
	InterruptionBudget *InterruptionBudget `json:"interruptionBudget,omitempty"`

	// PodNonInterruptLabels selects pods that must finish before a node is interrupted (the
	// same operator, key and value rules as nodeSelector).
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn'] ? (has(r.values) && size(r.values) > 0) : (!has(r.values) || size(r.values) == 0))",message="matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="matchLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, !k.contains('/') || k.matches('^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/'))",message="matchLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(self.matchLabels[k]) <= 63)",message="matchLabels values must be label values of at most 63 characters"
	// +optional
	PodNonInterruptLabels *metav1.LabelSelector `json:"podNonInterruptLabels,omitempty"`

	// Drain is how a node is drained before an interrupt (and before the uninstall of a package
	// with an interrupt), as NodeWright's drain configuration mirrors kubectl drain's flags:
	// gracePeriod, timeout, deleteEmptyDirData, force, the pods never drained (skipPodLabels)
	// and what happens at the timeout (onTimeout). Unset, and every field unset: the drain as
	// it always was (each pod's own grace period, no timeout, emptyDir and unmanaged pods
	// evicted), so existing sets do not change. See Drain.
	// +optional
	Drain *Drain `json:"drain,omitempty"`

	// AdditionalTolerations are added to every stage pod (so tainted nodes can be served), at
	// most 64. As the Pod API requires: operator Exists or Equal (empty: Equal); a toleration
	// without a key needs Exists; Exists takes no value; a value is at most 63 characters;
	// effect NoSchedule, PreferNoSchedule or NoExecute (empty: all); tolerationSeconds only with
	// NoExecute.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator in ['', 'Exists', 'Equal']",message="a toleration's operator must be Exists or Equal"
	// +kubebuilder:validation:items:XValidation:rule="(has(self.key) && self.key != '') || (has(self.operator) && self.operator == 'Exists')",message="a toleration without a key must have operator Exists (it tolerates every taint)"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",message="a toleration with operator Exists takes no value"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63",message="a toleration's value must be a label value of at most 63 characters"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.effect) || self.effect in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute']",message="a toleration's effect must be NoSchedule, PreferNoSchedule or NoExecute (empty: every effect)"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",message="a toleration's tolerationSeconds needs effect NoExecute"
	// +optional
	AdditionalTolerations []corev1.Toleration `json:"additionalTolerations,omitempty"`

	// Rollout configures soak and the health-failure policy (as NixFleet's rollout does).
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`

	// DeploymentPolicy rolls the set out by compartments (groups of nodes picked by labels,
	// each with its own budget) in batches (fixed, linear or exponential), as Skyhook's
	// DeploymentPolicy does; here it is part of the set instead of a separate object. Excludes
	// interruptionBudget.
	// +optional
	DeploymentPolicy *DeploymentPolicy `json:"deploymentPolicy,omitempty"`

	// RuntimeRequired: this set's packages must be complete on a node before workloads run
	// there, as Skyhook's runtimeRequired. Nodes join with the runtime-required taint
	// (DefaultRuntimeRequiredTaint, gantry.dev/runtime-required=true:NoSchedule, unless the
	// reconciler's --runtime-required-taint names another; every stage pod tolerates it); the
	// reconciler removes it from a node once every runtime-required set that selects the node
	// (not disabled, not being deleted) is complete on that node, node by node. A node no
	// runtime-required set selects keeps the taint. status.runtimeRequiredNodes counts the
	// selected nodes still tainted and the RuntimeRequiredTaint condition names what holds them.
	// A node that also carries another taint the stage pods do not tolerate waits for it (as
	// Skyhook does): status waiting, reason WaitingForTaint, never Stalled.
	// +optional
	RuntimeRequired bool `json:"runtimeRequired,omitempty"`

	// AutoTaintNewNodes: the reconciler adds the runtime-required taint to a new node this set
	// selects (one with no gantry.dev/ annotation: no set has touched it yet), as Skyhook's
	// autoTaintNewNodes, and marks it with the gantry.dev/auto-taint annotation; a node once
	// touched is never tainted again. Needs runtimeRequired. Tainting at provisioning
	// (kubelet --register-with-taints) is safer: until the reconciler sees a new node, pods
	// may be scheduled there.
	// +optional
	AutoTaintNewNodes bool `json:"autoTaintNewNodes,omitempty"`

	// RuntimeRequiredCordonAfter: when the runtime-required taint leaves a node (every
	// runtime-required set selecting it is complete there), the reconciler cordons the node in
	// the same update and marks it with the gantry.dev/runtime-required-cordon annotation
	// (naming this set), as NodeWright's runtimeRequiredCordonAfter (NVIDIA/nodewright #284): the
	// node is ready but takes no general workload until an operator releases it (kubectl
	// uncordon and remove the annotation), for a burn-in or an acceptance check. The cordon
	// outlives later interrupts: a set releasing its own cordon leaves a node with the
	// annotation unschedulable. Needs runtimeRequired.
	// +optional
	RuntimeRequiredCordonAfter bool `json:"runtimeRequiredCordonAfter,omitempty"`
}

// DrainTimeoutAction is spec.drain.onTimeout: what a drain that runs past spec.drain.timeout
// does.
// +kubebuilder:validation:Enum=Fail;Continue
type DrainTimeoutAction string

const (
	// DrainTimeoutFail: the node is erroring, naming the pods left and why; it stays cordoned
	// and its drain is tried again after the backoff of a failed stage (5s doubling to 5m).
	DrainTimeoutFail DrainTimeoutAction = "Fail"
	// DrainTimeoutContinue: the interrupt runs with the pods left on the node (a Warning event
	// DrainTimeout names them).
	DrainTimeoutContinue DrainTimeoutAction = "Continue"
)

// NonInterruptTimeoutAction is spec.drain.onNonInterruptTimeout: what a cordoned node does once
// its podNonInterruptLabels pods have run past spec.drain.nonInterruptTimeout.
// +kubebuilder:validation:Enum=Fail;Drain
type NonInterruptTimeoutAction string

const (
	// NonInterruptTimeoutFail: the node is erroring, naming the pods, and goes on waiting for
	// them (the set is erroring, an apply fails).
	NonInterruptTimeoutFail NonInterruptTimeoutAction = "Fail"
	// NonInterruptTimeoutDrain: the pods are drained like any other (the Eviction API, the drain's
	// settings and timeout), then the interrupt runs.
	NonInterruptTimeoutDrain NonInterruptTimeoutAction = "Drain"
)

// Drain is spec.drain: how the pods of a cordoned node are evicted before its interrupt, as
// NodeWright's drain configuration (its answer to "make node-drain behaviour configurable,
// mirror kubectl drain", nodewright #259). Pods are evicted through the Eviction API, so
// PodDisruptionBudgets apply; the drain is done when no pod to evict is left and none is still
// terminating. Left alone whatever the settings: pods not running or pending, kube-system,
// DaemonSet pods (kubectl's --ignore-daemonsets, always on), pods tolerating the
// unschedulable taint, Gantry's own stage pods and the reconciler's pod. The defaults keep
// today's drain, and, as NodeWright, invert kubectl drain's for deleteEmptyDirData and force
// (kubectl ships both false): package sets run at bring-up and in maintenance windows.
// +kubebuilder:validation:XValidation:rule="!has(self.onTimeout) || (has(self.timeout) && duration(self.timeout) > duration('0s'))",message="drain.onTimeout needs drain.timeout greater than 0s: without a timeout the drain never times out"
// +kubebuilder:validation:XValidation:rule="!has(self.onNonInterruptTimeout) || (has(self.nonInterruptTimeout) && duration(self.nonInterruptTimeout) > duration('0s'))",message="drain.onNonInterruptTimeout needs drain.nonInterruptTimeout greater than 0s: without it the node waits for the non-interrupt pods as long as they run"
type Drain struct {
	// GracePeriod is the grace period given to each evicted pod (the eviction's
	// DeleteOptions.gracePeriodSeconds, kubectl drain --grace-period), whole seconds (rounded
	// up). Unset: each pod's own terminationGracePeriodSeconds (kubectl's -1). 0s deletes the
	// pods at once, without waiting for their containers to stop. Never negative.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="drain.gracePeriod must not be negative (unset it for each pod's own terminationGracePeriodSeconds)"
	// +optional
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`
	// Timeout bounds the drain (kubectl drain --timeout), from its first eviction until no pod
	// to evict is left and none is terminating. Unset or 0s: no timeout, the drain waits as long
	// as it takes (a PodDisruptionBudget that never allows the eviction holds the node cordoned;
	// DrainBlocked names it). Never negative.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="drain.timeout must not be negative (unset it, or 0s, for no timeout)"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DeleteEmptyDirData: evict pods with emptyDir volumes, whose data is lost (kubectl drain
	// --delete-emptydir-data). false: such pods are not evicted and hold the drain (DrainBlocked
	// names them) until they go or the timeout. Unset: true.
	// +optional
	DeleteEmptyDirData *bool `json:"deleteEmptyDirData,omitempty"`
	// Force: evict pods that declare no controller (bare pods, which nothing recreates; kubectl
	// drain --force). false: such pods are not evicted and hold the drain (DrainBlocked names
	// them) until they go or the timeout. Unset: true.
	// +optional
	Force *bool `json:"force,omitempty"`
	// SkipPodLabels selects pods the drain never evicts and never waits for: they keep running
	// through the drain and the interrupt (e.g. a node agent that survives a service restart).
	// Unlike podNonInterruptLabels, whose pods must finish before the node is drained or
	// interrupted (the node waits for them), skipped pods do not hold the node. A pod matching
	// both is waited for. Not kubectl drain's --pod-selector, which selects the pods to drain.
	// The same operator, key and value rules as nodeSelector.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn'] ? (has(r.values) && size(r.values) > 0) : (!has(r.values) || size(r.values) == 0))",message="matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="matchLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, !k.contains('/') || k.matches('^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/'))",message="matchLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(self.matchLabels[k]) <= 63)",message="matchLabels values must be label values of at most 63 characters"
	// +optional
	SkipPodLabels *metav1.LabelSelector `json:"skipPodLabels,omitempty"`
	// OnTimeout is what happens when the drain runs past timeout (needs timeout): Fail (the
	// default) makes the node erroring, naming the pods left and why (a refusing
	// PodDisruptionBudget, still terminating, an emptyDir or unmanaged pod the settings keep),
	// so the set is erroring and an apply fails; the node stays cordoned and the drain is tried
	// again after the backoff of a failed stage (5s doubling to 5m). Continue runs the
	// interrupt with those pods on the node and says so in a Warning event DrainTimeout.
	// +optional
	OnTimeout DrainTimeoutAction `json:"onTimeout,omitempty"`
	// NonInterruptTimeout bounds how long a cordoned node waits for its podNonInterruptLabels
	// pods (long-running work that must not be interrupted, NVIDIA/nodewright #543), from the
	// first pass that found the node cordoned with them running; onNonInterruptTimeout says what
	// happens then. Unset or 0s: the node waits as long as they run. Never negative.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="drain.nonInterruptTimeout must not be negative (unset it, or 0s, to wait as long as the pods run)"
	// +optional
	NonInterruptTimeout *metav1.Duration `json:"nonInterruptTimeout,omitempty"`
	// OnNonInterruptTimeout is what happens at nonInterruptTimeout (needs it): Fail (the default)
	// makes the node erroring, naming the pods, and it goes on waiting for them; Drain evicts
	// them like any other pod (the Eviction API, this drain's settings and timeout), then the
	// interrupt runs.
	// +optional
	OnNonInterruptTimeout NonInterruptTimeoutAction `json:"onNonInterruptTimeout,omitempty"`
}

// DeploymentPolicy is a set's rollout by compartments and batches (Skyhook's
// DeploymentPolicy spec plus its deploymentPolicyOptions).
type DeploymentPolicy struct {
	// Default is the budget and strategy of the nodes no compartment picks (Skyhook's
	// __default__ compartment). Unset: those nodes all at once, no batches.
	// +optional
	Default *PolicyDefault `json:"default,omitempty"`
	// Compartments pick nodes by labels; a node belongs to the first compartment (in this
	// order) whose selector matches it. Each has its own budget and, optionally, strategy
	// (else the default's).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Compartments []Compartment `json:"compartments,omitempty"`
	// ResetBatchStateOnCompletion: when every node of a compartment is complete, its batch
	// state starts over (the next rollout begins again at the initial batch). Default true,
	// as Skyhook's deploymentPolicyOptions.
	// +optional
	ResetBatchStateOnCompletion *bool `json:"resetBatchStateOnCompletion,omitempty"`
}

// PolicyDefault is the budget and strategy of the nodes no compartment picks.
type PolicyDefault struct {
	// Budget bounds how many of those nodes are in flight at once. Unset: all of them.
	// +optional
	Budget *InterruptionBudget `json:"budget,omitempty"`
	// Strategy batches them. Unset: no batches, only the budget.
	// +optional
	Strategy *DeploymentStrategy `json:"strategy,omitempty"`
}

// Compartment is a named group of nodes with its own budget and strategy.
type Compartment struct {
	// Name is unique in the policy (a DNS-1123 label; "default" names the nodes no compartment
	// picks in status and cannot be used).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self != 'default'",message="compartment name default is reserved for the nodes no compartment picks"
	Name string `json:"name"`
	// Selector picks the compartment's nodes among the set's (matchLabels, matchExpressions).
	Selector metav1.LabelSelector `json:"selector"`
	// Budget bounds how many of the compartment's nodes are in flight at once: percent (of
	// the compartment's nodes, floor, at least 1) or count.
	Budget InterruptionBudget `json:"budget"`
	// Strategy batches the compartment's nodes. Unset: the default's strategy; none there:
	// only the budget.
	// +optional
	Strategy *DeploymentStrategy `json:"strategy,omitempty"`
}

// StrategyType is a deployment strategy's batch growth.
// +kubebuilder:validation:Enum=fixed;linear;exponential
type StrategyType string

const (
	// StrategyFixed: every batch has initialBatch nodes.
	StrategyFixed StrategyType = "fixed"
	// StrategyLinear: each batch grows by delta after a successful batch, shrinks by delta after a failed one.
	StrategyLinear StrategyType = "linear"
	// StrategyExponential: each batch is growthFactor times the last after a successful batch, divided by it after a failed one.
	StrategyExponential StrategyType = "exponential"
)

// DeploymentStrategy is how a compartment's nodes are batched (Skyhook's fixed, linear and
// exponential strategies, with its defaults). A batch starts only when the previous one has
// finished (each node complete, or failed); a batch succeeds when at least batchThreshold
// percent of its nodes complete. After failureThreshold failed batches in a row, while less
// than safetyLimit percent of the compartment's nodes are done, the compartment stops (the
// set is Stalled) until the package versions change.
// +kubebuilder:validation:XValidation:rule="!has(self.delta) || self.type == 'linear'",message="delta is only for type linear"
// +kubebuilder:validation:XValidation:rule="!has(self.growthFactor) || self.type == 'exponential'",message="growthFactor is only for type exponential"
type DeploymentStrategy struct {
	// Type is fixed, linear or exponential.
	Type StrategyType `json:"type"`
	// InitialBatch is the first batch's node count (default 1).
	// +kubebuilder:validation:Minimum=1
	// +optional
	InitialBatch *int32 `json:"initialBatch,omitempty"`
	// Delta is what a linear batch grows (or shrinks) by, in nodes (default 1).
	// +kubebuilder:validation:Minimum=1
	// +optional
	Delta *int32 `json:"delta,omitempty"`
	// GrowthFactor multiplies (or divides) an exponential batch (default 2).
	// +kubebuilder:validation:Minimum=2
	// +optional
	GrowthFactor *int32 `json:"growthFactor,omitempty"`
	// BatchThreshold is the percent of a batch's nodes that must complete for the batch to
	// succeed (1-100, default 100).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	BatchThreshold *int32 `json:"batchThreshold,omitempty"`
	// FailureThreshold is how many failed batches in a row stop the compartment (default 3).
	// +kubebuilder:validation:Minimum=1
	// +optional
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
	// SafetyLimit is the percent of the compartment's nodes done (complete or failed) past
	// which failed batches no longer stop it (1-100, default 50); below it, a failed batch
	// also shrinks the next one.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	SafetyLimit *int32 `json:"safetyLimit,omitempty"`
}

// CompartmentStatus is a compartment's progress (Skyhook's compartmentStatuses).
type CompartmentStatus struct {
	// Name of the compartment ("default": the nodes no compartment picks).
	Name string `json:"name"`
	// Matched is how many of the set's nodes the compartment has.
	Matched int32 `json:"matched"`
	// Ceiling is how many of them may be in flight at once (the budget).
	Ceiling int32 `json:"ceiling"`
	// InProgress is how many are in flight now.
	// +optional
	InProgress int32 `json:"inProgress,omitempty"`
	// Completed is how many are complete.
	// +optional
	Completed int32 `json:"completed,omitempty"`
	// ProgressPercent is completed × 100 / matched (floor).
	// +optional
	ProgressPercent int32 `json:"progressPercent,omitempty"`
	// Batch is the batch state (strategies only).
	// +optional
	Batch *BatchState `json:"batch,omitempty"`
}

// BatchState is where a compartment's batches stand (Skyhook's BatchProcessingState, plus
// the current batch's nodes so a restarted reconciler goes on with the same batch).
type BatchState struct {
	// CurrentBatch numbers the batch under way or last finished (1 first; 0 none yet).
	// +optional
	CurrentBatch int32 `json:"currentBatch,omitempty"`
	// Nodes are the current batch's nodes; empty between batches.
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// ConsecutiveFailures counts failed batches in a row.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// CompletedNodes and FailedNodes count the nodes of finished batches.
	// +optional
	CompletedNodes int32 `json:"completedNodes,omitempty"`
	// +optional
	FailedNodes int32 `json:"failedNodes,omitempty"`
	// LastBatchSize and LastBatchFailed are the last finished batch's size and outcome (they
	// size the next batch).
	// +optional
	LastBatchSize int32 `json:"lastBatchSize,omitempty"`
	// +optional
	LastBatchFailed bool `json:"lastBatchFailed,omitempty"`
	// ShouldStop: failureThreshold failed batches in a row below the safety limit; no batch
	// starts until the package versions change.
	// +optional
	ShouldStop bool `json:"shouldStop,omitempty"`
	// Versions identifies the package versions the state is for ("<name>@<version>,..."
	// hashed): when they change, the state starts over (as Skyhook resets it).
	// +optional
	Versions string `json:"versions,omitempty"`
}

// InterruptionBudget is a maximum number of nodes in flight at once, as a percentage of the
// selected nodes (floor, at least 1) or a count (at least 1).
// +kubebuilder:validation:XValidation:rule="has(self.percent) != has(self.count)",message="interruptionBudget needs exactly one of percent or count"
type InterruptionBudget struct {
	// Percent of the selected nodes, 1-100.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`
	// Count of nodes, at least 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Count *int32 `json:"count,omitempty"`
}

// Rollout configures how nodes converge (as NixFleet's rollout does).
// +kubebuilder:validation:XValidation:rule="!has(self.soakCheckInterval) || duration(self.soakCheckInterval) >= duration('1s')",message="soakCheckInterval must be at least 1s"
// +kubebuilder:validation:XValidation:rule="!has(self.healthChecks) || self.healthChecks.all(c, !has(c.command) || (has(c.image) && size(c.image) > 0))",message="an exec health check (command) needs image"
type Rollout struct {
	// SoakDuration is how long a node soaks after its last stage before it counts as
	// Converged (e.g. "30s"; 0 or unset: no soak). While it soaks (Soaking), the check of each
	// package's last stage is re-run as a Pod in rounds: one at once, then every
	// soakCheckInterval, the last when the window ends; Converged once that last round passed,
	// Failed as soon as a round fails (onHealthFailure applies). With no soak, healthChecks
	// still run once after the last stage.
	// +optional
	SoakDuration *metav1.Duration `json:"soakDuration,omitempty"`
	// SoakCheckInterval is the time between the starts of two soak check rounds (at least 1s;
	// a round still running delays the next). Unset: soakDuration/3, at least 5s.
	// +optional
	SoakCheckInterval *metav1.Duration `json:"soakCheckInterval,omitempty"`
	// OnHealthFailure: halt (no new node starts while a node is Failed; its stage is retried
	// with backoff) or rollback (the failed node returns to what it had: the previous version;
	// the previous config after a config-only change; nothing, the package uninstalled if
	// enabled, for a new package; the installed version re-applied when the uninstall of a
	// downgrade fails; the rollout stops and "<package>@<version>" is quarantined, or
	// "<package>@<version>#config-<hash>" for a config). Default halt.
	// +kubebuilder:default=halt
	// +optional
	OnHealthFailure HealthFailurePolicy `json:"onHealthFailure,omitempty"`
	// Waves roll the set out in order, as NixFleet's waves: a node belongs to the first wave
	// whose selector matches it (nodes no wave picks come last), and no node of a wave starts
	// until every node of the waves before it is done (complete, soak included).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Waves []Wave `json:"waves,omitempty"`
	// HealthChecks are health gates beside the packages' own checks, as NixFleet's health
	// checks: each runs as a Pod on the node in every soak round, or, with no soak window
	// (soakDuration unset or 0, for the rollout or the node's wave), once after the node's last
	// stage (the node is Soaking until it passed). A failing one fails the node like a failing
	// check (onHealthFailure applies: halt retries, rollback returns the packages changed in
	// this rollout to what they were).
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	HealthChecks []HealthCheck `json:"healthChecks,omitempty"`
	// NodeEdges order nodes within this set, as NixFleet's edges between hosts: the after
	// node does not start this set's new version until the before node is done for this set
	// (complete, soak included). An edge naming a node the set does not select is ignored; a
	// node already in flight finishes. A cycle (a → b → a) is an invalid spec (Stalled,
	// InvalidSpec).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	NodeEdges []NodeEdge `json:"nodeEdges,omitempty"`
	// FleetBudget shares one in-flight limit between every package set naming the same
	// budget, as NixFleet's fleet-wide disruptionBudgets across rollouts: a node counts once
	// while any of those sets has it in flight (its rollout Activating, Deferred, Soaking or
	// Failed, or cordoned by the set), and a set starts no new node while the count is at the
	// limit (maxInFlight nodes, or maxInFlightPct percent of the nodes the sets select). When
	// the sets disagree on the limit the lowest among the existing sets wins (a
	// set that starts nodes before a set with a lower value exists uses the values it sees:
	// give every set of a budget the same maxInFlight). The set's own interruptionBudget still
	// applies.
	// +optional
	FleetBudget *FleetBudget `json:"fleetBudget,omitempty"`
	// Release makes the packages a signed release, as NixFleet's signed releases: no stage
	// starts on any node until the signature verifies against the public key (and, with
	// freshnessWindow, while the release is fresh). See Release.
	// +optional
	Release *Release `json:"release,omitempty"`
}

// Release is a signed release of the set's packages (NixFleet's release signing and
// freshnessWindow). The signed payload is the release's canonical bytes (packageset.
// ReleasePayload): the line "gantry.dev/release/v1", the line "signedAt <signedAt>", then one
// line "package <name> <version> <image>" per package sorted by name, each line ending in "\n".
// The signature is over those bytes as `cosign sign-blob --key` makes it (ECDSA P-256 with
// SHA-256, ASN.1 DER; or ed25519), verified locally with sigstore's signature library, no
// network. A signature that does not verify (or packages changed without a new signature)
// holds every node (no stage starts; stages already running finish) and the set is Stalled
// (ReleaseNotVerified). A release older than freshnessWindow starts no new node (nodes already
// activating finish, converged nodes stay) and the set is Stalled (ReleaseStale) while a node
// still needs it.
type Release struct {
	// PublicKey is the PEM public key ("-----BEGIN PUBLIC KEY-----", PKIX) the signature must
	// verify against: ECDSA P-256 (cosign's cosign.pub) or ed25519.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	PublicKey string `json:"publicKey"`
	// Signature is the base64 signature of the release payload (what `cosign sign-blob --key`
	// prints).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Signature string `json:"signature"`
	// SignedAt is when the release was signed, UTC to the second, e.g. "2026-11-26T15:00:00Z";
	// it is part of the signed payload, and freshnessWindow counts from it.
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`
	SignedAt string `json:"signedAt"`
	// FreshnessWindow is how long after signedAt the release may start nodes (NixFleet's
	// freshnessWindow, e.g. "72h"); unset: no limit. Never negative.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="freshnessWindow must not be negative (unset it for no limit)"
	// +optional
	FreshnessWindow *metav1.Duration `json:"freshnessWindow,omitempty"`
}

// FleetBudgetStatus is a shared budget's use (status.fleetBudget).
type FleetBudgetStatus struct {
	// Name of the budget.
	Name string `json:"name"`
	// MaxInFlight is the limit in force: the lowest limit of the sets sharing it (a
	// maxInFlightPct resolved to a count of the nodes the sets select).
	MaxInFlight int32 `json:"maxInFlight"`
	// InFlight is how many nodes are in flight across those sets after the pass.
	InFlight int32 `json:"inFlight"`
	// Sets are the package sets sharing the budget, this one included, sorted.
	// +optional
	Sets []string `json:"sets,omitempty"`
	// Nodes are the nodes in flight: "<node> (<set>[, <set>])", by node name.
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// Waiting is how many of this set's nodes the budget holds.
	// +optional
	Waiting int32 `json:"waiting,omitempty"`
	// NodeSelector is the node selector of the rule in force (a label selector string, e.g.
	// "rack=a"); absent: the budget counts every node.
	// +optional
	NodeSelector string `json:"nodeSelector,omitempty"`
}

// ConvergedEdge is one entry of spec.afterConverged: a package set this set waits for, fleet
// wide (NixFleet's channelEdges[] {before, after, reason}: Name is the before channel, this
// set the after one).
type ConvergedEdge struct {
	// Name of the package set that must be converged first (a DNS-1123 label of at most 40
	// characters).
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Reason says why this set waits (NixFleet's channelEdges[].reason), e.g. "canary before
	// production"; shown in status.afterConvergedWaits and the Ready condition's message. At
	// most 256 characters.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// NodeEdge is one edge between two nodes (NixFleet's edges[] {after, before} between hosts).
// +kubebuilder:validation:XValidation:rule="self.before != self.after",message="a node edge needs two different nodes"
type NodeEdge struct {
	// Before is the node that goes first (a Node name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Before string `json:"before"`
	// After is the node that waits until Before is done for this set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	After string `json:"after"`
	// Reason says why After waits for Before (NixFleet's edges[].reason), e.g. "database
	// primary before its replica"; shown where the node waits: "<after> waits for <before>
	// (<reason>)" in status.nodeEdgeWaits and the Ready condition, and in the rollout preview's
	// constraints. At most 256 characters.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// FleetBudget names a budget shared by several package sets (NixFleet's disruptionBudgets
// shared by several rollouts), with a count (maxInFlight) or a percentage (maxInFlightPct).
// +kubebuilder:validation:XValidation:rule="has(self.maxInFlight) != has(self.maxInFlightPct)",message="fleetBudget needs exactly one of maxInFlight or maxInFlightPct"
type FleetBudget struct {
	// Name of the budget: the sets naming it share it (a DNS-1123 label).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// MaxInFlight is the most nodes in flight at once across the sets sharing the budget
	// (the lowest of the existing sets' values wins: give them all the same value).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxInFlight int32 `json:"maxInFlight,omitempty"`
	// MaxInFlightPct is the limit as a percentage (1-100) of the nodes the sets sharing the
	// budget select (their union, each node once), floor, at least 1: NixFleet's
	// maxInFlightPct. Each set's value is resolved to a count and the lowest wins, as for
	// maxInFlight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxInFlightPct *int32 `json:"maxInFlightPct,omitempty"`
	// NodeSelector limits the budget to the nodes it matches, as NixFleet's
	// disruptionBudgets[].selector: only they count and only they are held (a node it does not
	// match is not limited by this budget), and maxInFlightPct is then a percentage of the
	// matching nodes the sets select. Unset: every node. When the sets of a budget disagree,
	// one rule is in force: the lowest limit, with that set's selector (ties: the set first by
	// name). A selector that does not parse is an invalid spec (Stalled). Checked as
	// spec.nodeSelector is.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn'] ? (has(r.values) && size(r.values) > 0) : (!has(r.values) || size(r.values) == 0))",message="matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="matchLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, !k.contains('/') || k.matches('^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/'))",message="matchLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(self.matchLabels[k]) <= 63)",message="matchLabels values must be label values of at most 63 characters"
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
}

// HealthCheck is an exec, HTTP, failed-systemd-units or compliance-evidence probe run as a Pod on the node. It has NODE_NAME and
// NODE_IP (the node's address) in its environment, which command, args and url may use as
// $(NODE_IP).
// +kubebuilder:validation:XValidation:rule="[has(self.command), has(self.httpGet), has(self.systemdFailedUnits), has(self.compliance)].filter(x, x).size() == 1",message="a health check needs exactly one of command (exec), httpGet, systemdFailedUnits or compliance"
type HealthCheck struct {
	// Name of the check (a DNS-1123 label of at most 20 characters), in its Pod's name and
	// in the failure message.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=20
	Name string `json:"name"`
	// Image runs the check. Default for httpGet: busybox:1.36 (its wget).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
	// Command is an exec check: the container's command (exit 0 passes). Needs image.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Command []string `json:"command,omitempty"`
	// Args of the command.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Args []string `json:"args,omitempty"`
	// HTTPGet is an HTTP check: a GET of url must answer 2xx within the timeout.
	// +optional
	HTTPGet *HTTPGetCheck `json:"httpGet,omitempty"`
	// SystemdFailedUnits is NixFleet's healthGate.systemdFailedUnits: the check passes while
	// the node's host has at most max failed systemd units (`systemctl list-units
	// --state=failed` run in the host's namespaces through nsenter, from a privileged pod in
	// the host PID namespace: the stage Pods' namespace must allow privileged pods). The
	// failure message names the failed units. Image: default busybox:1.36 (its nsenter).
	// +optional
	SystemdFailedUnits *SystemdFailedUnitsCheck `json:"systemdFailedUnits,omitempty"`
	// Compliance is NixFleet's compliance probe (RFC-0007's evidence probe, kind = "evidence"):
	// the check reads the evidence file NixFleet's compliance-evidence-collector wrote on the
	// node's host and passes when every control mapped to the framework passed. Like
	// systemdFailedUnits it runs from a privileged pod in the host PID namespace (it reads the
	// file through /proc/1/root). Image: default busybox:1.36 (its sh and awk).
	// +optional
	Compliance *ComplianceCheck `json:"compliance,omitempty"`
	// Mode is NixFleet's gate mode: enforce (default) fails the node when a run fails;
	// observe records the failure (the HealthChecksObserved condition names the node, the
	// check and its output, and a Warning event is emitted) and lets the rollout go on, as
	// NixFleet's health gates and compliance probes in observe mode.
	// +kubebuilder:validation:Enum=enforce;observe
	// +optional
	Mode HealthCheckMode `json:"mode,omitempty"`
	// Timeout bounds one run of the check, default 1m: an httpGet check's request (wget -T) and
	// the check Pod, whose activeDeadlineSeconds is the timeout plus 30s for it to start.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// PodLabels are added to the check's pod (at most 64; keys label keys, values at most 63
	// characters).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="podLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('/') || (k.indexOf('/') <= 253 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/')))",message="podLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="podLabels values must be label values of at most 63 characters"
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`
}

// HealthCheckMode is how a failed health check counts: enforce or observe.
type HealthCheckMode string

const (
	// HealthCheckEnforce: a failed run fails the node (onHealthFailure applies).
	HealthCheckEnforce HealthCheckMode = "enforce"
	// HealthCheckObserve: a failed run is recorded (condition, event); the node goes on.
	HealthCheckObserve HealthCheckMode = "observe"
)

// SystemdFailedUnitsCheck is a health check on the host's failed systemd units (NixFleet's
// healthGate.systemdFailedUnits).
type SystemdFailedUnitsCheck struct {
	// Max is the most failed units the check allows (default 0: any failed unit fails it).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Max int32 `json:"max,omitempty"`
}

// ComplianceCheck is NixFleet's evidence probe (RFC-0007 §3.2, kind = "evidence", fields
// framework and evidencePath) for one compliance framework. The check reads the evidence file
// (nixfleet-compliance's docs/evidence-format.md, schemaVersion 1: {schemaVersion, hostname,
// collectedAt, controls: [{controlId, passed, frameworkArticles: {<framework>: [articles]}}]}),
// keeps the controls whose frameworkArticles name the framework, and passes when every one of
// them has passed = true, as NixFleet's agent's evidence runner does. It fails, as NixFleet's
// "probe failure to execute = Fail", when the file is missing or unreadable, is not JSON, has
// another schemaVersion, or no control maps to the framework. The run's output names the failed
// controls (or why it could not judge) and the evidence's collectedAt.
//
// NixFleet's healthGate.complianceProbes.required and channel compliance.mode are the check's
// mode: required = true / mode "enforce" is enforce, mode "permissive" is observe, and
// "disabled" is no compliance check (RFC-0007 replaced both with the probe's own mode).
type ComplianceCheck struct {
	// Framework is the NixFleet compliance framework, one of the names NixFleet's mkFleet
	// accepts by default (complianceFrameworks): anssi-bp028, nis2, dora, iso27001. It is
	// matched exactly against the keys of each control's frameworkArticles.
	// +kubebuilder:validation:Enum=anssi-bp028;nis2;dora;iso27001
	Framework string `json:"framework"`
	// EvidencePath is the evidence file on the node's host, an absolute path of segments of
	// letters, digits, '.', '_' and '-', none starting with '.' (no "..": the check reads it
	// from a privileged pod); default /var/lib/nixfleet-compliance/evidence.json, where
	// NixFleet's collector writes it.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$`
	// +optional
	EvidencePath string `json:"evidencePath,omitempty"`
}

// ComplianceFrameworks are the compliance framework names NixFleet accepts
// (arcanesys/nixfleet lib/mk-fleet.nix, complianceFrameworks' default), in its order: the
// values of ComplianceCheck.Framework.
var ComplianceFrameworks = []string{"anssi-bp028", "nis2", "dora", "iso27001"}

// DefaultComplianceEvidencePath is where NixFleet's compliance-evidence-collector writes the
// evidence (RFC-0007's evidencePath default; the agent's DEFAULT_EVIDENCE_PATH).
const DefaultComplianceEvidencePath = "/var/lib/nixfleet-compliance/evidence.json"

// HTTPGetCheck is an HTTP health check.
type HTTPGetCheck struct {
	// URL to GET, e.g. "http://$(NODE_IP):9400/health".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	URL string `json:"url"`
}

// Wave is one step of an ordered rollout: the nodes its selector picks.
type Wave struct {
	// Name of the wave (a DNS-1123 label), shown in status.currentWave.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Selector picks the wave's nodes among the set's.
	Selector metav1.LabelSelector `json:"selector"`
	// SoakDuration is how long this wave's nodes soak (NixFleet's waves[].soakMinutes),
	// instead of spec.rollout.soakDuration; "0s": no soak for this wave. Unset: the rollout's.
	// The soak check interval follows it as for the rollout (soakCheckInterval, else a third).
	// +optional
	SoakDuration *metav1.Duration `json:"soakDuration,omitempty"`
}

// Package is one package of a set: an image whose stages (apply, config, upgrade, uninstall,
// post-interrupt, and their checks) run on each node.
// +kubebuilder:validation:XValidation:rule="!has(self.configInterrupts) || !has(self.config) || self.configInterrupts.all(k, k in self.config)",message="configInterrupts keys must be keys of config"
type Package struct {
	// Name: lower-case letters, digits and '-', starting and ending with a letter, at most 43
	// characters (Skyhook's pattern).
	// +kubebuilder:validation:Pattern=`^[a-z][-a-z0-9]{0,41}[a-z]$`
	// +kubebuilder:validation:MaxLength=43
	Name string `json:"name"`
	// Version is a semantic version (semver.org 2.0.0), e.g. "1.2.3" or "2.0.0-rc.1"; as Skyhook
	// users write them, "1.2" is accepted too (compared as 1.2.0, kept as written). Higher than a
	// node's version → upgrade; lower → uninstall of the old, then apply.
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`
	// Image is the package image; the stage is passed as the container's first argument. An
	// image without a tag or digest runs with the version as its tag (as Skyhook does):
	// "ghcr.io/acme/tuned" at version 1.2 runs "ghcr.io/acme/tuned:1.2". OCI tags cannot
	// contain '+', so build metadata is tagged with '_' instead (as Helm does): version
	// 1.2.3+build.5 runs "ghcr.io/acme/tuned:1.2.3_build.5".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`
	// Env holds plain environment variables of the stage containers, name → value.
	// +optional
	Env map[string]string `json:"env,omitempty"`
	// EnvFrom sets environment variables from Secret or ConfigMap keys (in the stage Pods' namespace).
	// +listType=map
	// +listMapKey=name
	// +optional
	EnvFrom []EnvFromRef `json:"envFrom,omitempty"`
	// Config is mounted into every stage container at /etc/gantry/config, one file per key
	// holding its value (env GANTRY_CONFIG_DIR names the path), from an immutable ConfigMap
	// per content in the stage Pods' namespace. Keys are ConfigMap keys (letters, digits, '-', '_',
	// '.'; not '.', not starting with '..'). A change re-runs config (and the interrupt only
	// for keys listed in ConfigInterrupts).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 253 && k.matches('^[-._a-zA-Z0-9]+$') && k != '.' && !k.startsWith('..'))",message="config keys must be ConfigMap keys (file names): letters, digits, '-', '_' and '.', not '.' and not starting with '..'"
	// +optional
	Config map[string]string `json:"config,omitempty"`
	// Host gives the stage containers access to the node itself, as Skyhook's packages have
	// (drivers, kernel settings): privileged containers, the host's PID and network
	// namespaces, and the host's root filesystem mounted read-write. Unset: none (the stages
	// run unprivileged, with no host access).
	// +optional
	Host *HostAccess `json:"host,omitempty"`
	// Skyhook runs an existing Skyhook package image unchanged, as Skyhook's operator runs it:
	// an init container copies the image's /skyhook-package content to the host, then the
	// agent image runs each stage and its check with Skyhook's arguments (<stage> /root
	// <copy dir>) and environment. It implies full host access (privileged, host PID and
	// network, the host's / at /root).
	// +optional
	Skyhook *SkyhookExecution `json:"skyhook,omitempty"`
	// Interrupt the node needs after config (cordon, drain, interrupt, post-interrupt).
	// +optional
	Interrupt *Interrupt `json:"interrupt,omitempty"`
	// ConfigInterrupts: config key → interrupt needed when only that key changes.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	ConfigInterrupts map[string]Interrupt `json:"configInterrupts,omitempty"`
	// DependsOn: package name → version; this package starts on a node only when those are
	// complete there.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	DependsOn map[string]string `json:"dependsOn,omitempty"`
	// Resources of the stage containers.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// GracefulShutdown becomes the stage pods' terminationGracePeriodSeconds. Never negative.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="gracefulShutdown must not be negative"
	// +optional
	GracefulShutdown *metav1.Duration `json:"gracefulShutdown,omitempty"`
	// StageTimeout bounds one stage attempt (the stage Pod's activeDeadlineSeconds); past it the stage is
	// erroring. Default 10m; at least 1s (activeDeadlineSeconds counts whole seconds).
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="stageTimeout must be at least 1s (a stage Pod's activeDeadlineSeconds counts whole seconds)"
	// +optional
	StageTimeout *metav1.Duration `json:"stageTimeout,omitempty"`
	// PodLabels are added to the stage pods (at most 64; keys label keys: optional DNS-subdomain
	// prefix and '/', then a name of at most 63 characters; values at most 63 characters).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="podLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('/') || (k.indexOf('/') <= 253 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/')))",message="podLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="podLabels values must be label values of at most 63 characters"
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`
	// PodAnnotations are added to the stage pods (at most 64; keys annotation keys, as label
	// keys but the prefix may have upper-case letters).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="podAnnotations keys must be annotation keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('/') || (k.indexOf('/') <= 253 && k.matches('^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?([.][A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*/')))",message="podAnnotations key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// Uninstall: when enabled, uninstall stages run when the package is removed from the set,
	// on a downgrade, and when the set is deleted.
	// +optional
	Uninstall *Uninstall `json:"uninstall,omitempty"`
	// ReapplyOnReboot runs the package again on a node that boots into a fresh OS (NodeWright's
	// reapplyOnReboot, NVIDIA/nodewright #180: read-only or stateless systems such as GKE's
	// Container-Optimized OS lose what the package did at every boot). When a node's boot ID
	// (status.nodeInfo.bootID) changes outside a reboot interrupt of this set (a reboot by
	// another package set counts as outside), a package with this flag whose flow was complete
	// there runs its apply and config stages (and their checks) again, same version and config,
	// without its interrupt; on a runtimeRequired set the node gets the runtime-required taint
	// again until the set is complete there. A node that reports no boot ID never re-applies.
	// +optional
	ReapplyOnReboot bool `json:"reapplyOnReboot,omitempty"`
}

// Interrupt is what the node needs after a package's config stage. Merged across packages on a
// node: reboot > restartAllServices > service > noop (service lists are merged).
// +kubebuilder:validation:XValidation:rule="self.type == 'service' ? (has(self.services) && size(self.services) > 0) : !has(self.services) || size(self.services) == 0",message="services are required for type service and only allowed for it"
type Interrupt struct {
	// Type: service, reboot, noop or restartAllServices.
	Type InterruptType `json:"type"`
	// Services to restart (type service only).
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Services []string `json:"services,omitempty"`
}

// HostAccess is what of the node a package's stage containers may touch.
// +kubebuilder:validation:XValidation:rule="!has(self.rootMountPath) || self.rootMountPath != '/'",message="host.rootMountPath cannot be /: mount the host's root filesystem under a directory such as /root"
type HostAccess struct {
	// Privileged runs the stage containers privileged.
	// +optional
	Privileged bool `json:"privileged,omitempty"`
	// HostPID runs the stage pods in the host's PID namespace.
	// +optional
	HostPID bool `json:"hostPID,omitempty"`
	// HostNetwork runs the stage pods in the host's network namespace.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// RootMountPath is where the host's root filesystem (hostPath /) is mounted in the stage
	// containers, read-write with host-to-container mount propagation, e.g. "/root" as Skyhook.
	// Unset: not mounted.
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/-]+$`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	RootMountPath string `json:"rootMountPath,omitempty"`
}

// SkyhookExecution runs a Skyhook package image with Skyhook's agent.
type SkyhookExecution struct {
	// AgentImage is the Skyhook agent image that runs the stages (Skyhook's AGENT_IMAGE or the
	// package's agentImageOverride), e.g. "ghcr.io/nvidia/skyhook/agent:6.3.0".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	AgentImage string `json:"agentImage"`
	// CopyDirRoot is the host directory the package content is copied under (Skyhook's
	// COPY_DIR_ROOT), default /var/lib/skyhook.
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/-]+$`
	// +optional
	CopyDirRoot string `json:"copyDirRoot,omitempty"`
	// LogRoot is the host directory of the agent's logs (Skyhook's AGENT_LOG_ROOT), default
	// /var/log/skyhook.
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/-]+$`
	// +optional
	LogRoot string `json:"logRoot,omitempty"`
}

// Uninstall configures uninstall stages.
// +kubebuilder:validation:XValidation:rule="!has(self.apply) || !self.apply || self.enabled",message="uninstall.apply needs uninstall.enabled"
type Uninstall struct {
	// Enabled runs the uninstall stage when the package is removed, downgraded or the set deleted.
	Enabled bool `json:"enabled"`
	// Apply uninstalls the package from every node now, without deleting the set or removing
	// the package from it (Skyhook's uninstall.apply): the package is treated as removed (its
	// uninstall stage runs, then its node record is dropped). Setting it back to false before a
	// node's uninstall started cancels it there; after, the package is applied again. Every
	// package of a set may be uninstalled this way.
	// +optional
	Apply bool `json:"apply,omitempty"`
}

// PackageSetStatus is the observed state of a PackageSet (the status contract, docs/guides/status-and-conditions.md),
// derived from the per-node state on the Nodes' gantry.dev/state_<set> annotations.
type PackageSetStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Status is the one-word summary, aggregated from NodeStatus as Skyhook does.
	// +optional
	Status PackageSetStatusValue `json:"status,omitempty"`
	// Conditions: Ready, Reconciling, Stalled (kstatus) and TaintNotTolerable, DrainBlocked,
	// InvalidSpec, VersionQuarantined, ReleaseNotVerified, ReleaseStale, RuntimeRequiredTaint
	// (runtimeRequired sets).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// NodeStatus is the status of each listed node: every selected node, and every node still
	// holding this set's packages, up to MaxListedNodes (500). Past that the nodes that need
	// attention are listed first (erroring, blocked, in_progress, paused, unknown, waiting,
	// disabled, then complete; by name within each), and NodesOmitted counts the rest, so the
	// status stays far below etcd's 1.5 MiB object limit on any fleet; NodeCounts counts
	// every node.
	// +optional
	NodeStatus map[string]PackageSetStatusValue `json:"nodeStatus,omitempty"`
	// NodeState is each listed node's per-package state, node → package name → status (the
	// nodes of NodeStatus).
	// +optional
	NodeState map[string]map[string]PackageStatus `json:"nodeState,omitempty"`
	// NodeRollout is each listed node's rollout state (NixFleet's host rollout states; the
	// nodes of NodeStatus). A node nothing has started on yet is Pending.
	// +optional
	NodeRollout map[string]RolloutState `json:"nodeRollout,omitempty"`
	// NodeCounts is how many nodes are in each status, over every node NodeStatus would list
	// without its bound, e.g. {"complete": 9500, "in_progress": 500}.
	// +optional
	NodeCounts map[PackageSetStatusValue]int32 `json:"nodeCounts,omitempty"`
	// RolloutCounts is how many nodes are in each rollout state, over the same nodes as
	// NodeCounts, e.g. {"Converged": 9500, "Activating": 400, "Soaking": 100}.
	// +optional
	RolloutCounts map[RolloutState]int32 `json:"rolloutCounts,omitempty"`
	// NodesOmitted is how many nodes NodeStatus, NodeState and NodeRollout leave out because
	// the set has more than MaxListedNodes (absent: none).
	// +optional
	NodesOmitted int32 `json:"nodesOmitted,omitempty"`
	// CompleteNodes is "<complete>/<selected>", e.g. "3/5".
	// +optional
	CompleteNodes string `json:"completeNodes,omitempty"`
	// NodesInProgress is the number of nodes in_progress.
	// +optional
	NodesInProgress int32 `json:"nodesInProgress,omitempty"`
	// QuarantinedVersions are what the rollout rolled back from: "<package>@<version>" (a
	// version, or the target of a downgrade whose uninstall failed), or
	// "<package>@<version>#config-<hash>" (a config of that version: hash of its values). A
	// spec asking for one is Stalled (VersionQuarantined) until the version or config changes.
	// +optional
	QuarantinedVersions []string `json:"quarantinedVersions,omitempty"`
	// CurrentWave is the rollout wave under way (spec.rollout.waves; "" when none, or when every
	// node is done; "(rest)" for the nodes no wave picks).
	// +optional
	CurrentWave string `json:"currentWave,omitempty"`
	// NodeEdgeWaits names the nodes spec.rollout.nodeEdges hold after the last pass: "<after>
	// waits for <before>[, <before>...]" (the before nodes not done yet; a before whose edge has
	// a reason as "<before> (<reason>)").
	// +optional
	NodeEdgeWaits []string `json:"nodeEdgeWaits,omitempty"`
	// AfterConvergedWaits names the spec.afterConverged sets that held nodes in the last pass
	// and why: "package set <name> (<reason>) is <status>: <complete>/<selected> nodes
	// complete" (the reason only when the entry has one; "is halted: ..." for an erroring,
	// blocked or Stalled set).
	// +optional
	AfterConvergedWaits []string `json:"afterConvergedWaits,omitempty"`
	// FleetBudget is the shared budget of spec.rollout.fleetBudget as the last pass saw it.
	// +optional
	FleetBudget *FleetBudgetStatus `json:"fleetBudget,omitempty"`
	// Compartments is the deployment policy's progress per compartment (set only with
	// spec.deploymentPolicy).
	// +listType=map
	// +listMapKey=name
	// +optional
	Compartments []CompartmentStatus `json:"compartments,omitempty"`
	// RuntimeRequiredNodes is, for a runtimeRequired set, how many of its selected nodes still
	// carry the runtime-required taint after the last pass (absent: none).
	// +optional
	RuntimeRequiredNodes int32 `json:"runtimeRequiredNodes,omitempty"`
}

// PackageStatus is one package's state on one node.
type PackageStatus struct {
	// Version of the package the stage runs for.
	Version string `json:"version"`
	// Stage the package is in.
	// +optional
	Stage PackageStage `json:"stage,omitempty"`
	// State of that stage.
	// +optional
	State PackageState `json:"state,omitempty"`
	// Restarts is the number of failed attempts of the current stage.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// Message says why a stage is erroring (the stage pod's or the kubelet's own words).
	// +optional
	Message string `json:"message,omitempty"`
}

// PackageSetList is a list of PackageSets.
// +kubebuilder:object:root=true
type PackageSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PackageSet{}, &PackageSetList{})
}

// IsPaused reports whether the set is paused: spec.paused, or the gantry.dev/pause=true
// annotation.
func (in *PackageSet) IsPaused() bool {
	return in.Spec.Paused || in.Annotations[AnnotationPause] == "true"
}
