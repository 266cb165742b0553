package packageset

import (
	"slices"
	"sort"
	"strings"
)

// ParseClearQuarantine splits the value of the PackageSet annotation
// gantry.dev/clear-quarantine (v1alpha1.AnnotationClearQuarantine): quarantine keys
// ("<package>@<version>" or "<package>@<version>#config-<hash>", as status.quarantinedVersions
// lists them) separated by commas, spaces ignored, duplicates and empty entries dropped; sorted.
func ParseClearQuarantine(value string) []string {
	var keys []string
	for _, k := range strings.Split(value, ",") {
		if k = strings.TrimSpace(k); k != "" && !slices.Contains(keys, k) {
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
