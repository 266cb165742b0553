package packageset

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// ConfigVolume is the stage pods' volume of the package's config ConfigMap.
const ConfigVolume = "gantry-config"

// StageTolerations are the tolerations of every stage pod: the cordon's own taint plus the
// set's additional tolerations.
func StageTolerations(set *v1alpha1.PackageSet) []corev1.Toleration {
	return append([]corev1.Toleration{
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}, set.Spec.AdditionalTolerations...)
}

// Untolerated names the first NoSchedule/NoExecute taint of taints ("key=value:Effect") that
// tols do not tolerate, "" when all are tolerated (PreferNoSchedule is ignored): a node with
// such a taint is blocked (Skyhook TaintNotTolerable).
func Untolerated(taints []corev1.Taint, tols []corev1.Toleration) string {
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for i := range tols {
			if tols[i].ToleratesTaint(&t) {
				ok = true
				break
			}
		}
		if !ok {
			return t.ToString()
		}
	}
	return ""
}

// NodeConditionTaints are the taints Kubernetes itself puts on a node and takes off again
// without the user, each with the node condition behind it: the node lifecycle controller's
// (TaintNodesByCondition: not-ready and unreachable from Ready, the pressure taints from the
// kubelet's conditions, network-unavailable) and the cloud controller manager's uninitialized
// taint (removed once it has initialised the node; no condition). Keys from
// k8s.io/api/core/v1 well_known_taints.go.
var NodeConditionTaints = map[string]corev1.NodeConditionType{
	corev1.TaintNodeNotReady:                         corev1.NodeReady,
	corev1.TaintNodeUnreachable:                      corev1.NodeReady,
	corev1.TaintNodeMemoryPressure:                   corev1.NodeMemoryPressure,
	corev1.TaintNodeDiskPressure:                     corev1.NodeDiskPressure,
	corev1.TaintNodePIDPressure:                      corev1.NodePIDPressure,
	corev1.TaintNodeNetworkUnavailable:               corev1.NodeNetworkUnavailable,
	"node.cloudprovider.kubernetes.io/uninitialized": "",
}

// TaintHold sorts the NoSchedule/NoExecute taints of a node that the set's stage pods do not
// tolerate into blocked, the first one nothing in the cluster will remove (the user must
// tolerate or remove it: Skyhook's TaintNotTolerable, Stalled), and waitFor, the ones a
// controller removes by itself (Kubernetes' NodeConditionTaints; on a runtime-required set every
// taint, as Skyhook treats a node being brought up as blocked, not failed). waitFor quotes the
// node condition behind a taint; blocked wins. Both are "" when every taint is tolerated.
func TaintHold(taints []corev1.Taint, conds []corev1.NodeCondition, tols []corev1.Toleration, runtimeRequired bool) (blocked, waitFor string) {
	var waits []string
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule || Untolerated([]corev1.Taint{t}, tols) == "" {
			continue
		}
		condType, lifecycle := NodeConditionTaints[t.Key]
		switch {
		case lifecycle:
			waits = append(waits, t.ToString()+nodeConditionWords(conds, condType))
		case runtimeRequired:
			waits = append(waits, t.ToString())
		case blocked == "":
			blocked = t.ToString()
		}
	}
	return blocked, strings.Join(waits, "; ")
}

// nodeConditionWords is " (node condition T=S Reason: message)" for the condition of type t in
// conds, "" when t is "" or absent.
func nodeConditionWords(conds []corev1.NodeCondition, t corev1.NodeConditionType) string {
	for _, c := range conds {
		if t == "" || c.Type != t {
			continue
		}
		s := fmt.Sprintf(" (node condition %s=%s", c.Type, c.Status)
		if c.Reason != "" {
			s += " " + c.Reason
		}
		if c.Message != "" {
			s += ": " + c.Message
		}
		return s + ")"
	}
	return ""
}

// GateOf is what the sets before set allow on a node with nodeLabels and nodeAnnotations:
// among sets (every PackageSet; set itself, disabled and deleting ones are skipped) those that
// come before set (lower priority, 0 meaning the default 200; ties by name): one with
// sequencing all that incomplete names (IncompleteEverywhere) gives GateWaiting on every node;
// of those that select the node, a paused one gives GatePaused (by: its name); else one not
// complete on the node (its gantry.dev/status_<set> annotation) gives GateWaiting (by: the
// last such one); else GateOpen (by ""). A set whose selector does not parse selects no node.
func GateOf(set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet, nodeLabels, nodeAnnotations map[string]string, incomplete map[string]bool) (g Gate, by string) {
	g = GateOpen
	for i := range sets {
		o := &sets[i]
		if o.Name == set.Name || o.Spec.Disabled || !o.DeletionTimestamp.IsZero() || !earlier(o, set) {
			continue
		}
		if incomplete[o.Name] {
			g, by = GateWaiting, o.Name
		}
		sel, err := metav1.LabelSelectorAsSelector(&o.Spec.NodeSelector)
		if err != nil || !sel.Matches(labels.Set(nodeLabels)) {
			continue
		}
		if o.IsPaused() {
			return GatePaused, o.Name
		}
		if nodeAnnotations[v1alpha1.AnnotationNodeStatusPrefix+o.Name] != string(v1alpha1.StatusComplete) {
			g, by = GateWaiting, o.Name
		}
	}
	return g, by
}

// priorityOf is spec.priority, 0 meaning DefaultPackageSetPriority.
func priorityOf(s *v1alpha1.PackageSet) int32 {
	if s.Spec.Priority == 0 {
		return v1alpha1.DefaultPackageSetPriority
	}
	return s.Spec.Priority
}

// earlier reports whether set a must be complete on a node before set b starts there: b names
// a in spec.after (NixFleet's edges), or a comes before b by priority and does not itself name
// b in spec.after or spec.afterConverged (an edge overrides the priority order: a set waiting
// for b to converge must not be waited for by b on b's nodes).
func earlier(a, b *v1alpha1.PackageSet) bool {
	if slices.Contains(b.Spec.After, a.Name) {
		return true
	}
	return before(a, b) && !slices.Contains(setEdges(a), b.Name)
}

// AfterCycle returns a cycle of spec.after and spec.afterConverged edges through set, as the
// names from set back to it (["a", "b", "c", "a"]; ["a", "a"] for a set that names itself), or
// nil when set is on none: every set of a cycle would wait for the next for ever (an invalid
// spec: NixFleet's edges and channelEdges form DAGs, and a set waiting per node for one that
// waits for it to converge deadlocks as well). sets are the cluster's package sets; a name no
// set has ends a path. The search follows each set's after list, then its afterConverged list,
// in their order, so the cycle reported is stable.
func AfterCycle(set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet) []string {
	byName := make(map[string]*v1alpha1.PackageSet, len(sets)+1)
	for i := range sets {
		byName[sets[i].Name] = &sets[i]
	}
	byName[set.Name] = set
	path, seen := []string{set.Name}, map[string]bool{set.Name: true}
	var visit func(s *v1alpha1.PackageSet) bool
	visit = func(s *v1alpha1.PackageSet) bool {
		for _, next := range setEdges(s) {
			if next == set.Name {
				path = append(path, next)
				return true
			}
			n, ok := byName[next]
			if !ok || seen[next] {
				continue
			}
			seen[next] = true
			path = append(path, next)
			if visit(n) {
				return true
			}
			path = path[:len(path)-1]
		}
		return false
	}
	if visit(set) {
		return path
	}
	return nil
}

// setEdges are the sets s waits for: spec.after, then spec.afterConverged's names.
func setEdges(s *v1alpha1.PackageSet) []string {
	out := slices.Clone(s.Spec.After)
	for _, e := range s.Spec.AfterConverged {
		out = append(out, e.Name)
	}
	return out
}

// AfterCycleMessage is the invalid-spec message of a cycle AfterCycle found through set (sets:
// the cluster's): "spec.after forms a cycle, a → b → a: ..." when every step is an after
// edge, else "spec.after and spec.afterConverged form a cycle, ...".
func AfterCycleMessage(cycle []string, set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet) string {
	byName := map[string]*v1alpha1.PackageSet{set.Name: set}
	for i := range sets {
		if sets[i].Name != set.Name {
			byName[sets[i].Name] = &sets[i]
		}
	}
	what := "spec.after forms a cycle"
	for i := 0; i+1 < len(cycle); i++ {
		if s := byName[cycle[i]]; s != nil && !slices.Contains(s.Spec.After, cycle[i+1]) {
			what = "spec.after and spec.afterConverged form a cycle"
			break
		}
	}
	return fmt.Sprintf("%s, %s: each of these package sets would wait for the next for ever; remove one of the edges", what, strings.Join(cycle, " → "))
}

// before reports whether set a comes before set b on a node: lower priority, ties by name.
func before(a, b *v1alpha1.PackageSet) bool {
	pa, pb := priorityOf(a), priorityOf(b)
	return pa < pb || pa == pb && a.Name < b.Name
}

// IncompleteEverywhere names the sets with sequencing all (not disabled, not deleting) that are
// not complete on every node they select, read from the nodes' labels and
// gantry.dev/status_<set> annotations (a set whose selector does not parse, or that selects
// no node, is complete): GateOf holds the nodes of every later set on them.
func IncompleteEverywhere(sets []v1alpha1.PackageSet, nodes []corev1.Node) map[string]bool {
	out := map[string]bool{}
	for i := range sets {
		s := &sets[i]
		if s.Spec.Sequencing != v1alpha1.SequencingAll || s.Spec.Disabled || !s.DeletionTimestamp.IsZero() {
			continue
		}
		if incompleteOn(s, nodes) {
			out[s.Name] = true
		}
	}
	return out
}

// incompleteOn says whether set s is not complete on a node it selects, from the nodes' labels
// and gantry.dev/status_<set> annotations (a set whose selector does not parse is complete).
func incompleteOn(s *v1alpha1.PackageSet, nodes []corev1.Node) bool {
	sel, err := metav1.LabelSelectorAsSelector(&s.Spec.NodeSelector)
	if err != nil {
		return false
	}
	for j := range nodes {
		n := &nodes[j]
		if sel.Matches(labels.Set(n.Labels)) && n.Annotations[v1alpha1.AnnotationNodeStatusPrefix+s.Name] != string(v1alpha1.StatusComplete) {
			return true
		}
	}
	return false
}

// StageLabel is a stage Pod's gantry.dev/stage label: the stage, or "<check>-soak" for a
// soak check.
func StageLabel(js JobSpec) string {
	if js.Probe != "" {
		return "health-" + js.Probe
	}
	if js.SoakCheck {
		return CheckOf(js.Stage) + "-soak"
	}
	return string(js.Stage)
}

// JobPackage is the package spec a stage runs: the one the node record kept (js.Spec: a
// rollback runs the previous version's, a removed package's uninstall its last one: Skyhook
// #186), else the set's current one of that name (records that predate kept specs); nil when
// neither exists. Error: a recorded spec that is not a Package.
func JobPackage(set *v1alpha1.PackageSet, js JobSpec) (*v1alpha1.Package, error) {
	if len(js.Spec) > 0 {
		pkg := &v1alpha1.Package{}
		if err := json.Unmarshal(js.Spec, pkg); err != nil {
			return nil, fmt.Errorf("node %s package %s: recorded spec: %w", js.Node, js.Package, err)
		}
		return pkg, nil
	}
	for i := range set.Spec.Packages {
		if set.Spec.Packages[i].Name == js.Package {
			return &set.Spec.Packages[i], nil
		}
	}
	return nil, nil
}

// StageConfig is the config ConfigMap a stage Pod mounts: its name (ConfigMapName) and the
// config of the package version the stage runs.
type StageConfig struct {
	Name string
	Data map[string]string
}

// StagePod is the Pod js asks for on node, and the config ConfigMap it mounts (nil without
// config), so the controller picks neither the version's spec nor its config: a health
// check's (DesiredProbePod; a nil Pod when the check left the spec: nothing to create) or a
// package stage's (DesiredPod of the spec JobPackage picks: the recorded version's, else the
// set's current one). The controller ensures the ConfigMap before it creates the Pod.
func StagePod(set *v1alpha1.PackageSet, node, namespace, managedBy string, js JobSpec) (*corev1.Pod, *StageConfig, error) {
	if js.Probe != "" {
		if set.Spec.Rollout != nil {
			for _, hc := range set.Spec.Rollout.HealthChecks {
				if hc.Name == js.Probe {
					return DesiredProbePod(set, node, namespace, managedBy, js, hc), nil, nil
				}
			}
		}
		return nil, nil, nil
	}
	pkg, err := JobPackage(set, js)
	if err != nil {
		return nil, nil, err
	}
	var cfg *StageConfig
	cfgName := "" // the package's config ConfigMap, "" without config
	if pkg != nil {
		if cfgName = ConfigMapName(set.Name, js.Package, pkg.Config); cfgName != "" {
			cfg = &StageConfig{Name: cfgName, Data: pkg.Config}
		}
	}
	return DesiredPod(set, node, namespace, managedBy, js, pkg, cfgName), cfg, nil
}

// DesiredPod is the stage Pod js on node, created by the reconciler itself as Skyhook's operator
// does (a Job per stage made the Job controller the bottleneck of large rollouts); the caller
// sets the owner. Its name is deterministic per stage and attempt (a second create is
// AlreadyExists); it is pinned to the node, never restarted and bounded by js.Timeout. The init
// container runs the stage, the main one its check. pkg may be nil; cfgName, when set, is the
// config ConfigMap mounted at ConfigMountPath. No service-account token is mounted: stages run
// on the host, never against the API server, so packages get no cluster credential.
func DesiredPod(set *v1alpha1.PackageSet, node, namespace, managedBy string, js JobSpec, pkg *v1alpha1.Package, cfgName string) *corev1.Pod {
	lbl := map[string]string{v1alpha1.LabelManagedBy: managedBy, v1alpha1.LabelPackageSet: set.Name,
		v1alpha1.LabelPackage: js.Package, v1alpha1.LabelStage: StageLabel(js), v1alpha1.LabelNode: node}
	podLabels := map[string]string{}
	podAnn := map[string]string{"gantry.dev/version": js.Version}
	if js.SoakCheck {
		podAnn["gantry.dev/soak-round"] = strconv.Itoa(js.SoakRound)
	}
	var env []corev1.EnvVar
	var res corev1.ResourceRequirements
	var grace *int64
	if pkg != nil {
		for k, v := range pkg.PodLabels {
			podLabels[k] = v
		}
		for k, v := range pkg.PodAnnotations {
			podAnn[k] = v
		}
		env = packageEnv(pkg)
		if cfgName != "" {
			env = append(env, corev1.EnvVar{Name: EnvConfigDir, Value: ConfigMountPath})
		}
		res = pkg.Resources
		if pkg.GracefulShutdown != nil {
			s := int64(pkg.GracefulShutdown.Seconds())
			grace = &s
		}
	}
	for k, v := range lbl {
		podLabels[k] = v
	}
	env = append(env, corev1.EnvVar{Name: "GANTRY_PACKAGE", Value: js.Package}, corev1.EnvVar{Name: "GANTRY_VERSION", Value: js.Version},
		corev1.EnvVar{Name: "GANTRY_STAGE", Value: string(js.Stage)}, corev1.EnvVar{Name: "GANTRY_NODE", Value: node})
	var mounts []corev1.VolumeMount
	var volumes []corev1.Volume
	if cfgName != "" {
		mounts = []corev1.VolumeMount{{Name: ConfigVolume, MountPath: ConfigMountPath, ReadOnly: true}}
		volumes = []corev1.Volume{{Name: ConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cfgName}}}}}
	}
	container := func(name string, args ...string) corev1.Container {
		return corev1.Container{Name: name, Image: js.Image, Args: args, Env: env, Resources: res, VolumeMounts: mounts}
	}
	noToken := false
	spec := corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, Tolerations: StageTolerations(set),
		TerminationGracePeriodSeconds: grace, Volumes: volumes, AutomountServiceAccountToken: &noToken}
	switch {
	case js.SoakCheck:
		spec.Containers = []corev1.Container{container("check", CheckOf(js.Stage))}
	case IsInterruptStage(js.Stage):
		args := []string{"interrupt"}
		if js.Interrupt != nil {
			args = append(args, string(js.Interrupt.Type))
			args = append(args, js.Interrupt.Services...)
		}
		spec.Containers = []corev1.Container{container("interrupt", args...)}
	default:
		spec.InitContainers = []corev1.Container{container("stage", string(js.Stage))}
		spec.Containers = []corev1.Container{container("check", CheckOf(js.Stage))}
	}
	if pkg != nil && pkg.Skyhook != nil {
		skyhookPod(&spec, set, js, pkg, env, mounts)
	} else if pkg != nil && pkg.Host != nil {
		withHostAccess(&spec, *pkg.Host)
	}
	logsOnError(&spec)
	deadline := int64(js.Timeout.Seconds())
	spec.ActiveDeadlineSeconds = &deadline
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: js.Name, Namespace: namespace, Labels: podLabels, Annotations: podAnn}, Spec: spec}
}

// logsOnError sets every container of spec to terminationMessagePolicy FallbackToLogsOnError:
// a stage script that fails without writing /dev/termination-log still leaves its last output
// lines as the container's termination message, which the set's status quotes (the kubelet
// keeps at most the last 80 lines or 2 KiB).
func logsOnError(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			cs[i].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		}
	}
}

// Skyhook's defaults (its operator's COPY_DIR_ROOT and AGENT_LOG_ROOT) and paths.
const (
	SkyhookCopyDirRoot = "/var/lib/skyhook"
	SkyhookLogRoot     = "/var/log/skyhook"
	// SkyhookHostRoot is where Skyhook mounts the host's / in its containers.
	SkyhookHostRoot = "/root"
	// SkyhookPackageDir is the content directory of a Skyhook package image.
	SkyhookPackageDir = "/skyhook-package"
	hostRootVolume    = "host-root"
)

// withHostAccess gives every container of spec the node access h asks for: privileged,
// host PID and network namespaces, the host's / mounted at h.RootMountPath (hostPath,
// read-write, host-to-container propagation, as Skyhook's root-mount).
func withHostAccess(spec *corev1.PodSpec, h v1alpha1.HostAccess) {
	spec.HostPID, spec.HostNetwork = h.HostPID, h.HostNetwork
	if h.RootMountPath != "" {
		dir := corev1.HostPathDirectory
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: hostRootVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &dir}}})
	}
	prop := corev1.MountPropagationHostToContainer
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if h.Privileged {
				cs[i].SecurityContext = &corev1.SecurityContext{Privileged: &h.Privileged}
			}
			if h.RootMountPath != "" {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: hostRootVolume, MountPath: h.RootMountPath, MountPropagation: &prop})
			}
		}
	}
}

// SkyhookCopyDir is the host directory a Skyhook package's content is copied to, as Skyhook
// lays it out: <copyDirRoot>/<set>/<package>-<version>-<set UID>-<set generation>.
func SkyhookCopyDir(set *v1alpha1.PackageSet, pkg *v1alpha1.Package, version string) string {
	root := SkyhookCopyDirRoot
	if pkg.Skyhook.CopyDirRoot != "" {
		root = pkg.Skyhook.CopyDirRoot
	}
	return fmt.Sprintf("%s/%s/%s-%s-%s-%d", root, set.Name, pkg.Name, version, set.UID, set.Generation)
}

// SkyhookInterruptArg is the interrupt as Skyhook's agent reads it: base64 of its JSON with
// the agent's type names (reboot → node_restart, service → service_restart, noop → no_op,
// restartAllServices → restart_all_services).
func SkyhookInterruptArg(in *v1alpha1.Interrupt) string {
	t := map[v1alpha1.InterruptType]string{v1alpha1.InterruptReboot: "node_restart", v1alpha1.InterruptService: "service_restart",
		v1alpha1.InterruptNoop: "no_op", v1alpha1.InterruptRestartAllServices: "restart_all_services"}[in.Type]
	b, _ := json.Marshal(struct {
		Type     string   `json:"type"`
		Services []string `json:"services,omitempty"`
	}{t, in.Services}) // plain struct: cannot fail
	return base64.StdEncoding.EncodeToString(b)
}

// skyhookPod turns the stage pod into Skyhook's: an init container (the package image)
// copies /skyhook-package to the host's copy dir, then the agent image runs the stage
// ("<stage> /root <copy dir>") and its check ("<stage>-check /root <copy dir>"), or the
// interrupt ("interrupt /root <copy dir> <SkyhookInterruptArg>"), with the package's env plus
// SKYHOOK_LOG_DIR, SKYHOOK_ROOT_DIR, COPY_RESOLV=false and SKYHOOK_RESOURCE_ID, the config at
// /skyhook-package/configmaps, privileged, in the host's PID and network namespaces, the
// host's / at /root.
func skyhookPod(spec *corev1.PodSpec, set *v1alpha1.PackageSet, js JobSpec, pkg *v1alpha1.Package, env []corev1.EnvVar, mounts []corev1.VolumeMount) {
	sk := pkg.Skyhook
	copyDir := SkyhookCopyDir(set, pkg, js.Version)
	logRoot := SkyhookLogRoot
	if sk.LogRoot != "" {
		logRoot = sk.LogRoot
	}
	agentEnv := append(append([]corev1.EnvVar(nil), env...),
		corev1.EnvVar{Name: "SKYHOOK_LOG_DIR", Value: logRoot + "/" + set.Name},
		corev1.EnvVar{Name: "SKYHOOK_ROOT_DIR", Value: strings.TrimSuffix(copyDir[:strings.LastIndex(copyDir, "/")], "/")},
		corev1.EnvVar{Name: "COPY_RESOLV", Value: "false"},
		corev1.EnvVar{Name: "SKYHOOK_RESOURCE_ID", Value: fmt.Sprintf("%s-%s-%d_%s_%s", set.Name, set.UID, set.Generation, pkg.Name, js.Version)})
	var agentMounts []corev1.VolumeMount
	for _, m := range mounts {
		agentMounts = append(agentMounts, m)
		if m.Name == ConfigVolume {
			agentMounts = append(agentMounts, corev1.VolumeMount{Name: ConfigVolume, MountPath: SkyhookPackageDir + "/configmaps", ReadOnly: true})
		}
	}
	agent := func(name string, args ...string) corev1.Container {
		return corev1.Container{Name: name, Image: sk.AgentImage, Args: args, Env: agentEnv, Resources: pkg.Resources, VolumeMounts: agentMounts}
	}
	copyContent := corev1.Container{Name: "copy", Image: js.Image, Command: []string{"/bin/sh"},
		Args: []string{"-c", "mkdir -p " + SkyhookHostRoot + "/${SKYHOOK_DIR} && cp -r " + SkyhookPackageDir + "/* " + SkyhookHostRoot + "/${SKYHOOK_DIR}"},
		Env:  []corev1.EnvVar{{Name: "SKYHOOK_DIR", Value: copyDir}}}
	stage := strings.ToLower(string(js.Stage))
	switch {
	case js.SoakCheck:
		spec.InitContainers = []corev1.Container{copyContent}
		spec.Containers = []corev1.Container{agent("check", stage+"-check", SkyhookHostRoot, copyDir)}
	case IsInterruptStage(js.Stage):
		arg := ""
		if js.Interrupt != nil {
			arg = SkyhookInterruptArg(js.Interrupt)
		}
		spec.InitContainers = nil
		spec.Containers = []corev1.Container{agent("interrupt", "interrupt", SkyhookHostRoot, copyDir, arg)}
	default:
		spec.InitContainers = []corev1.Container{copyContent, agent("stage", stage, SkyhookHostRoot, copyDir)}
		spec.Containers = []corev1.Container{agent("check", stage+"-check", SkyhookHostRoot, copyDir)}
	}
	withHostAccess(spec, v1alpha1.HostAccess{Privileged: true, HostPID: true, HostNetwork: true, RootMountPath: SkyhookHostRoot})
}

// packageEnv is pkg's env (sorted by name) then its env_from references, in order.
func packageEnv(pkg *v1alpha1.Package) []corev1.EnvVar {
	var env []corev1.EnvVar
	keys := make([]string, 0, len(pkg.Env))
	for k := range pkg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: pkg.Env[k]})
	}
	for _, e := range pkg.EnvFrom {
		ev := corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{}}
		if e.SecretKeyRef != nil {
			ev.ValueFrom.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.SecretKeyRef.Name}, Key: e.SecretKeyRef.Key}
		} else if e.ConfigMapKeyRef != nil {
			ev.ValueFrom.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.ConfigMapKeyRef.Name}, Key: e.ConfigMapKeyRef.Key}
		}
		env = append(env, ev)
	}
	return env
}

// DefaultHealthCheckImage runs an httpGet health check (its wget).
const DefaultHealthCheckImage = "busybox:1.36"

// DefaultHealthCheckTimeout bounds one run of a health check without a timeout.
const DefaultHealthCheckTimeout = time.Minute

// HealthChecksOf are a rollout's health checks as the machine sees them (nil rollout: none).
func HealthChecksOf(ro *v1alpha1.Rollout) []HealthCheck {
	if ro == nil {
		return nil
	}
	var out []HealthCheck
	for _, hc := range ro.HealthChecks {
		t := DefaultHealthCheckTimeout
		if hc.Timeout != nil && hc.Timeout.Duration > 0 {
			t = hc.Timeout.Duration
		}
		out = append(out, HealthCheck{Name: hc.Name, Timeout: t, Observe: hc.Mode == v1alpha1.HealthCheckObserve})
	}
	return out
}

// ProbeStartAllowance is what a health check's Pod may spend starting (sandbox, network,
// image, container) on top of the check's own timeout: the stage deadline counts from the
// Pod's creation (failure.PodOutcome), and on a real kubelet a Pod takes seconds to start, so a deadline of
// the bare timeout failed healthy checks with DeadlineExceeded (found on the local cluster's
// real node).
const ProbeStartAllowance = 30 * time.Second

// DesiredProbePod is the soak-round Pod of health check hc on node (js.Probe names it): one
// container, hc's image with its command and args (exec), or `wget -q -T <timeout> -O
// /dev/null <url>` in hc's image (default DefaultHealthCheckImage) for httpGet; NODE_NAME
// and NODE_IP (the node's address, from the pod's status.hostIP) in its environment, which
// Kubernetes expands in $(NODE_IP) of command, args and the url; labelled as a stage Pod
// (stage health-<name>, no package), pinned to the node, never restarted, bounded by
// js.Timeout plus ProbeStartAllowance (activeDeadlineSeconds, in whole seconds), with no
// service-account token mounted.
func DesiredProbePod(set *v1alpha1.PackageSet, node, namespace, managedBy string, js JobSpec, hc v1alpha1.HealthCheck) *corev1.Pod {
	lbl := map[string]string{v1alpha1.LabelManagedBy: managedBy, v1alpha1.LabelPackageSet: set.Name,
		v1alpha1.LabelPackage: "", v1alpha1.LabelStage: StageLabel(js), v1alpha1.LabelNode: node}
	podLabels := map[string]string{}
	for k, v := range hc.PodLabels {
		podLabels[k] = v
	}
	for k, v := range lbl {
		podLabels[k] = v
	}
	c := corev1.Container{Name: "check", Image: hc.Image, Command: hc.Command, Args: hc.Args,
		Env: []corev1.EnvVar{{Name: "NODE_NAME", Value: node}, {Name: "GANTRY_NODE", Value: node},
			{Name: "NODE_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}}}}
	if hc.HTTPGet != nil {
		if c.Image == "" {
			c.Image = DefaultHealthCheckImage
		}
		secs := max(1, int(js.Timeout.Seconds()))
		c.Command, c.Args = []string{"wget"}, []string{"-q", "-T", strconv.Itoa(secs), "-O", "/dev/null", hc.HTTPGet.URL}
	}
	hostPID := false
	if hc.SystemdFailedUnits != nil {
		if c.Image == "" {
			c.Image = DefaultHealthCheckImage
		}
		c.Command, c.Args = []string{"sh", "-c", SystemdFailedUnitsScript(hc.SystemdFailedUnits.Max)}, nil
		privileged := true
		c.SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
		hostPID = true
	}
	if hc.Compliance != nil {
		if c.Image == "" {
			c.Image = DefaultHealthCheckImage
		}
		c.Command, c.Args = []string{"sh", "-c", ComplianceEvidenceScript(HostRoot, *hc.Compliance)}, nil
		privileged := true
		c.SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
		hostPID = true
	}
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	deadline := int64((js.Timeout + ProbeStartAllowance).Seconds())
	noToken := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: js.Name, Namespace: namespace, Labels: podLabels,
			Annotations: map[string]string{"gantry.dev/soak-round": strconv.Itoa(js.SoakRound)}},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, Tolerations: StageTolerations(set),
			HostPID: hostPID, Containers: []corev1.Container{c}, ActiveDeadlineSeconds: &deadline,
			AutomountServiceAccountToken: &noToken},
	}
}

// SystemdFailedUnitsScript is the sh script of a systemdFailedUnits check (NixFleet's
// healthGate.systemdFailedUnits.max): it lists the host's failed units with systemctl in PID
// 1's namespaces (nsenter; the pod runs privileged in the host PID namespace), prints how many
// and which, and exits 1 when there are more than most (2 when systemctl itself fails, its
// words printed). The output is the failed run's message (termination message from the log).
func SystemdFailedUnitsScript(most int32) string {
	return fmt.Sprintf(`out=$(nsenter -t 1 -m -u -i -n -p -- systemctl list-units --state=failed --no-legend --plain --no-pager 2>&1) || { echo "systemctl on the node failed: $out"; exit 2; }
units=$(printf '%%s\n' "$out" | awk 'NF {printf "%%s%%s", sep, $1; sep=" "}')
n=$(printf '%%s\n' "$out" | awk 'NF' | wc -l)
echo "$n failed systemd units on the node (at most %[1]d allowed)${units:+: $units}"
[ "$n" -le %[1]d ]`, most)
}

// HostRoot is the node's host filesystem as a privileged pod in the host PID namespace sees
// it: PID 1's root. A compliance check reads the evidence there with the image's own tools
// (not through nsenter: a NixOS host has no cat or awk at the paths busybox's PATH names).
const HostRoot = "/proc/1/root"

// ComplianceEvidenceScript is the sh script of a compliance check (NixFleet's RFC-0007 evidence
// probe for c.Framework): awk reads the evidence JSON under hostRoot and prints the verdict, its
// collectedAt and path. Exit 0: every control mapped to the framework passed; 1: one failed or
// none maps; 2: the evidence cannot be judged. Both fail the run, as NixFleet's runner does.
// Framework and path are single-quoted, safe because the CRD's enum and pattern exclude quotes.
// POSIX sh and awk only, so busybox runs it.
func ComplianceEvidenceScript(hostRoot string, c v1alpha1.ComplianceCheck) string {
	path := c.EvidencePath
	if path == "" {
		path = v1alpha1.DefaultComplianceEvidencePath
	}
	return fmt.Sprintf(`f='%[1]s%[2]s'
if [ ! -e "$f" ]; then echo "NixFleet compliance evidence %[2]s is missing on the node (compliance-evidence-collector has not written it): framework %[3]s fails"; exit 2; fi
if [ ! -r "$f" ]; then echo "NixFleet compliance evidence %[2]s is not readable on the node: framework %[3]s fails"; exit 2; fi
awk -v fw='%[3]s' -v path='%[2]s' '%[4]s' "$f"`, hostRoot, path, c.Framework, complianceAwk)
}

// complianceAwk judges an evidence file (see ComplianceEvidenceScript): a recursive-descent
// JSON reader that calls key() for every object key and scalar() for every string or literal,
// with the value's path ("/controls/0/passed"), then the verdict. No single quote in it (the
// script quotes it). Its messages never quote a value of a file that is not evidence (a parse
// error names the byte, not the token): they reach the set's conditions and events, which more
// people read than write package sets.
const complianceAwk = `
function ws() { while (pos <= n && index(" \t\r\n", substr(s, pos, 1)) > 0) pos++ }
function fail(m) { if (bad == "") bad = m " at byte " pos; pos = n + 1 }
function str(   c, out) {
	pos++; out = ""
	while (pos <= n) {
		c = substr(s, pos, 1)
		if (c == "\\") { out = out substr(s, pos, 2); pos += 2; continue }
		if (c == "\"") { pos++; return out }
		out = out c; pos++
	}
	fail("unterminated string"); return ""
}
function ctl(p,   rest, j) {
	if (substr(p, 1, 10) != "/controls/") return ""
	rest = substr(p, 11); j = index(rest, "/")
	if (j == 0) { cidx = rest; return "" }
	cidx = substr(rest, 1, j - 1); return substr(rest, j + 1)
}
function key(p,   f) {
	f = ctl(p)
	if (f != "" && cidx + 1 > nc) nc = cidx + 1
	if (f == ("frameworkArticles/" fw)) mapped[cidx] = 1
}
function scalar(p, t, v,   f) {
	if (p == "/schemaVersion") sv = v
	if (p == "/collectedAt" && t == "s") at = v
	f = ctl(p)
	if (f == "controlId" && t == "s") id[cidx] = v
	if (f == "passed") passed[cidx] = t v
}
function value(p,   c, k, i, v) {
	ws(); if (bad != "") return
	c = substr(s, pos, 1)
	if (c == "{") {
		pos++; ws()
		if (substr(s, pos, 1) == "}") { pos++; return }
		while (bad == "") {
			ws()
			if (substr(s, pos, 1) != "\"") { fail("expected a key"); return }
			k = str(); ws()
			if (substr(s, pos, 1) != ":") { fail("expected a colon"); return }
			pos++; key(p "/" k); value(p "/" k); ws()
			c = substr(s, pos, 1); pos++
			if (c == "}") return
			if (c != ",") { pos--; fail("expected a comma or }"); return }
		}
		return
	}
	if (c == "[") {
		pos++; ws()
		if (substr(s, pos, 1) == "]") { pos++; return }
		for (i = 0; bad == ""; i++) {
			value(p "/" i); ws()
			c = substr(s, pos, 1); pos++
			if (c == "]") return
			if (c != ",") { pos--; fail("expected a comma or ]"); return }
		}
		return
	}
	if (c == "\"") { v = str(); scalar(p, "s", v); return }
	v = ""
	while (pos <= n && index(",:{}[]\" \t\r\n", substr(s, pos, 1)) == 0) { v = v substr(s, pos, 1); pos++ }
	if (v !~ /^(true|false|null|-?[0-9][0-9.eE+-]*)$/) { fail(v == "" ? "unexpected end of input" : "unexpected value"); return }
	scalar(p, "l", v)
}
{ s = s $0 "\n" }
END {
	n = length(s); pos = 1; bad = ""; sv = ""; at = "unknown"
	value("")
	ws()
	if (bad == "" && pos <= n) fail("trailing data")
	if (bad != "") { print "NixFleet compliance evidence " path " is not JSON (" bad "): framework " fw " fails"; exit 2 }
	if (sv != "1") { print "NixFleet compliance evidence " path " has schemaVersion " (sv == "" ? "none" : (sv ~ /^[0-9]+$/ && length(sv) <= 6 ? sv : "not a number")) ", not 1 (upgrade nixfleet-compliance): framework " fw " fails"; exit 2 }
	total = 0; nf = 0; failed = ""
	for (i = 0; i < nc; i++) {
		if (!(i in mapped)) continue
		total++; name = (i in id) ? id[i] : "controls[" i "]"
		if (passed[i] != "ltrue") { nf++; failed = failed " " name }
	}
	if (total == 0) { print "no control in NixFleet compliance evidence " path " maps to framework " fw " (collected " at "): framework " fw " fails"; exit 1 }
	if (nf > 0) { print "framework " fw ": " nf " of " total " controls failed:" failed " (evidence " path ", collected " at ")"; exit 1 }
	print "framework " fw ": all " total " controls passed (evidence " path ", collected " at ")"
}`

// NegativeResources returns an error naming the first negative quantity among the packages'
// resources ("spec.packages[0].resources.requests[cpu] = -1 is negative: ..."), or nil. The
// API server would refuse every stage Pod of such a package.
func NegativeResources(pkgs []v1alpha1.Package) error {
	for i, p := range pkgs {
		for _, l := range []struct {
			field string
			list  corev1.ResourceList
		}{{"requests", p.Resources.Requests}, {"limits", p.Resources.Limits}} {
			for _, name := range slices.Sorted(maps.Keys(l.list)) {
				if q := l.list[name]; q.Sign() < 0 {
					return fmt.Errorf("spec.packages[%d].resources.%s[%s] = %s is negative: a stage container's requests and limits are zero or more", i, l.field, name, q.String())
				}
			}
		}
	}
	return nil
}
