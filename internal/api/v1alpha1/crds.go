package v1alpha1

import "embed"

// CRDs holds the generated CustomResourceDefinition YAML (crds/*.yaml), embedded so the
// reconciler can apply it at start.
//
//go:embed crds/*.yaml
var CRDs embed.FS
