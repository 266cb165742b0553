package packageset

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// ConfigMountPath is where a package's config is mounted in every stage container: one file
// per config key, holding its value (a ConfigMap volume, read-only).
const ConfigMountPath = "/etc/gantry/config"

// EnvConfigDir is the stage containers' environment variable naming ConfigMountPath (set only
// when the package has config).
const EnvConfigDir = "GANTRY_CONFIG_DIR"

// ConfigMapName is the name of the immutable ConfigMap holding config (key → value) of
// package pkg of set: "<set, ≤18>-<pkg, ≤16>-cfg-<hash, 10 hex>", at most 50 characters, a
// DNS-1123 label. The hash covers set, package and every key and value, so each (set,
// package, config content) has its own ConfigMap: a config change, or a rollback to an older
// version's config, mounts a different one, never one edited in place. "" for no config.
func ConfigMapName(set, pkg string, config map[string]string) string {
	if len(config) == 0 {
		return ""
	}
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(set + "\x00" + pkg)
	for _, k := range keys {
		b.WriteString("\x00" + k + "\x00" + config[k])
	}
	h := shortHash(b.String())[:10]
	return strings.Trim(cut(set, 18), "-") + "-" + strings.Trim(cut(pkg, 16), "-") + "-cfg-" + h
}

// ConfigMapsInUse names the config ConfigMaps (ConfigMapName) the set may still mount: those
// of the wanted packages and, on every node record, of each package's recorded spec (what its
// stage Jobs run with: a removed package's uninstall, a rollback) and, until the node is
// Converged, of its previous version or config (what a rollback returns to; a later rollout
// records its own previous spec, whose ConfigMap is the current one). Specs that do not decode are skipped: a Pod falls back to the
// current spec for them, which the wants cover.
func ConfigMapsInUse(set string, wants []Want, records []*NodeRecord) map[string]bool {
	out := map[string]bool{}
	add := func(pkg string, spec []byte) {
		if len(spec) == 0 {
			return
		}
		var s struct {
			Config map[string]string `json:"config"`
		}
		if json.Unmarshal(spec, &s) != nil {
			return
		}
		if n := ConfigMapName(set, pkg, s.Config); n != "" {
			out[n] = true
		}
	}
	for _, w := range wants {
		add(w.Name, w.Spec)
	}
	for _, rec := range records {
		if rec == nil {
			continue
		}
		for name, r := range rec.Packages {
			add(name, r.Spec)
			if r.Prev != nil && rec.Rollout != v1alpha1.RolloutConverged {
				add(name, r.Prev.Spec) // a failure before Converged rolls back to it
			}
		}
	}
	return out
}
