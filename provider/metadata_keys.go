package provider

import (
	"strings"
)

// systemKeyPrefixes are the label/annotation key prefixes (the part of a key before "/")
// that tools and controllers write on objects: kubectl's last-applied-configuration
// (kubectl.kubernetes.io), the prefixes Kubernetes reserves for its own components
// (kubernetes.io, k8s.io) and Gantry's own bookkeeping (gantry.dev). A key is a system key
// when its prefix is exactly one of these: subdomains are not, so the recommended labels
// app.kubernetes.io/name and a team's own team.gantry.dev/x are user keys. Read ignores system
// keys unless the configuration set them, so they cause no drift, and the provider never
// removes them; every other key is imported and shows as drift when changed out of band.
var systemKeyPrefixes = map[string]bool{"kubectl.kubernetes.io": true, "kubernetes.io": true, "k8s.io": true, "gantry.dev": true}

// isSystemKey reports whether the label/annotation key k has one of systemKeyPrefixes as its
// prefix (e.g. "kubectl.kubernetes.io/last-applied-configuration": true;
// "app.kubernetes.io/name", "team.gantry.dev/x", "name": false).
func isSystemKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	return ok && systemKeyPrefixes[prefix]
}

// readMeta returns the labels or annotations to put in state: every key on the object except
// system keys the prior state (or plan) did not have. nil when none remain (null in state),
// unless prior is an empty non-nil map.
func readMeta(live, prior map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range live {
		if _, had := prior[k]; had || !isSystemKey(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		if prior != nil {
			return map[string]string{}
		}
		return nil
	}
	return out
}
