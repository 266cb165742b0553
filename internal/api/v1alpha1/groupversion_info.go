// Package v1alpha1 holds the gantry.dev/v1alpha1 API types: Performer, Executor, PackageSet
// and Workspace. The CRD YAML in crds/ and
// zz_generated.deepcopy.go are generated from these types by controller-gen
// (`make generate`); both are committed and checked fresh by `make test`.
//
// +kubebuilder:object:generate=true
// +groupName=gantry.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every Gantry kind: gantry.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "gantry.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Gantry kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Gantry kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
