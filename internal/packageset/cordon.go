package packageset

import (
	"strings"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Cordon applies a node plan's cordon (take) or release to the node's annotations ann (changed
// in place) under key (gantry.dev/cordon_<set>) and returns the new spec.unschedulable. A node
// already unschedulable by hand is recorded as CordonOperator, so the operator's cordon is
// carried by whichever sets hold the node and never lifted by them. The node becomes
// schedulable only when no cordon annotation and no runtime-required cordon remains.
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
