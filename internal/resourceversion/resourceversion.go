// Package resourceversion compares Kubernetes resourceVersions, for the reconciler's
// expectations and the provider's wait engine. Pure: no client, no framework.
package resourceversion

import "strconv"

// Older reports whether resourceVersion a is older than b. resourceVersions are opaque in the
// API contract; in practice they are etcd revisions (integers), and only then does this
// compare. Empty or unparsable versions are never "older" (a caller waiting for a newer
// version then stops waiting).
func Older(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}
