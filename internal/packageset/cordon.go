package packageset

import (
	"strings"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Cordon applies a node plan's cordon (take: the set cordons the node) or release (the set
// drops its cordon) to a node's annotations ann (changed in place) and returns the node's new
// spec.unschedulable. key is the set's gantry.dev/cordon_<set> annotation.
//
// Taking writes "true", or v1alpha1.CordonOperator when the node was already unschedulable
// and either no set holds a cordon (an operator cordoned it by hand) or another set's cordon
// already says so: the operator's cordon is carried by whichever sets hold the node.
// Releasing deletes key; the node becomes schedulable only when no gantry.dev/cordon_*
// annotation remains, neither the released one nor any other said CordonOperator, and the node
// has no runtime-required cordon (AnnotationRuntimeRequiredCordon).
func Cordon(ann map[string]string, unschedulable bool, key string, take, release bool) bool {
	if take {
		if _, held := ann[key]; !held {
			v := "true"
			if unschedulable {
				others, operator := cordons(ann)
				if others == 0 || operator {
					v = v1alpha1.CordonOperator
				}
			}
			ann[key] = v
		}
		unschedulable = true
	}
	if release {
		was, held := ann[key]
		delete(ann, key)
		others, operator := cordons(ann)
		switch {
		case held && was == v1alpha1.CordonOperator && others > 0:
			// Hand the operator's cordon to a set still holding the node.
			for k := range ann {
				if strings.HasPrefix(k, v1alpha1.AnnotationCordonPrefix) {
					ann[k] = v1alpha1.CordonOperator
				}
			}
		case others == 0 && !operator && was != v1alpha1.CordonOperator && !persistent(ann):
			unschedulable = false
		}
	}
	return unschedulable
}

// persistent reports the runtime-required cordon (AnnotationRuntimeRequiredCordon): it outlives
// every set's own cordon.
func persistent(ann map[string]string) bool {
	_, ok := ann[v1alpha1.AnnotationRuntimeRequiredCordon]
	return ok
}

// cordons counts the gantry.dev/cordon_* annotations of ann and reports whether one says
// CordonOperator.
func cordons(ann map[string]string) (n int, operator bool) {
	for k, v := range ann {
		if strings.HasPrefix(k, v1alpha1.AnnotationCordonPrefix) {
			n++
			operator = operator || v == v1alpha1.CordonOperator
		}
	}
	return n, operator
}
