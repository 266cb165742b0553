package packageset

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// ParseClearQuarantine splits the value of the PackageSet annotation
// gantry.dev/clear-quarantine (v1alpha1.AnnotationClearQuarantine): quarantine keys
// ("<package>@<version>" or "<package>@<version>#config-<hash>", as status.quarantinedVersions
// lists them) separated by commas or white space (an operator writing "a@1 b@2" asks for two
// keys), duplicates and empty entries dropped; sorted.
func ParseClearQuarantine(value string) []string {
	var keys []string
	// Commas and any white space separate keys (a key has none: "<package>@<version>[#config-<hash>]").
	for _, k := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// clearQuarantine lifts the quarantines asked for (SetFacts.ClearQuarantine): the keys are
// dropped from the listed ones (status.quarantinedVersions) and from the node records that
// would list them again (a finished rollback's Reverting/RevertedFrom/RevertedConfig, a
// Withdrawn entry), so the next flow can try the version (or config) again. A key whose
// rollback is still running on some node (a Reverting record not yet Done) is not lifted yet:
// it is returned in pending (the controller keeps it in the annotation and the next pass tries
// again), since the rollback flow needs its record. Keys nothing holds are lifted at once (a
// no-op). It returns the nodes with the changed records (clones; the facts are not modified),
// the remaining listed keys, and the keys lifted and pending, sorted.
func clearQuarantine(keys, listed []string, nodes []NodeFacts) (out []NodeFacts, rest, lifted, pending []string) {
	if len(keys) == 0 {
		return nodes, listed, nil, nil
	}
	for _, k := range keys {
		if revertRunning(k, nodes) {
			pending = append(pending, k)
		} else {
			lifted = append(lifted, k)
		}
	}
	for _, q := range listed {
		if !slices.Contains(lifted, q) {
			rest = append(rest, q)
		}
	}
	out = make([]NodeFacts, len(nodes))
	for i, n := range nodes {
		out[i] = n
		if n.Record != nil && holdsAny(n.Record, lifted) {
			out[i].Record = liftFrom(n.Record, lifted)
		}
	}
	sort.Strings(lifted)
	sort.Strings(pending)
	return out, rest, lifted, pending
}

// revertRunning says whether some node runs the rollback flow that holds quarantine key k.
func revertRunning(k string, nodes []NodeFacts) bool {
	for _, n := range nodes {
		if n.Record == nil {
			continue
		}
		for name, r := range n.Record.Packages {
			if !r.Done && r.quarantineKey(name) == k {
				return true
			}
		}
	}
	return false
}

// holdsAny says whether rec holds one of keys (a finished rollback's record or a Withdrawn entry).
func holdsAny(rec *NodeRecord, keys []string) bool {
	for name, r := range rec.Packages {
		if q := r.quarantineKey(name); q != "" && slices.Contains(keys, q) {
			return true
		}
	}
	for name, v := range rec.Withdrawn {
		if slices.Contains(keys, Quarantine(name, v)) {
			return true
		}
	}
	return false
}

// liftFrom is a copy of rec without the quarantines keys: a finished rollback's record forgets
// what it reverted from (the package stays on the version it returned to) and a withdrawn
// package's entry goes (the package is absent, as on a new node).
func liftFrom(rec *NodeRecord, keys []string) *NodeRecord {
	c := rec.Clone()
	for name, r := range c.Packages {
		if q := r.quarantineKey(name); q != "" && slices.Contains(keys, q) {
			r.Reverting, r.RevertedFrom, r.RevertedConfig = false, "", ""
		}
	}
	for name, v := range c.Withdrawn {
		if slices.Contains(keys, Quarantine(name, v)) {
			delete(c.Withdrawn, name)
		}
	}
	if len(c.Withdrawn) == 0 {
		c.Withdrawn = nil
	}
	return c
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

// quarantinedKeyOf is the quarantine that stalls w on this pass ("" if none).
func (p *nodePass) quarantinedKeyOf(w *Want) string {
	if w == nil {
		return ""
	}
	return quarantinedKey(p.quarantine, w)
}
