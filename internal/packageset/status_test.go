package packageset

import (
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestAggregate(t *testing.T) {
	const (
		C = v1alpha1.StatusComplete
		B = v1alpha1.StatusBlocked
		W = v1alpha1.StatusWaiting
		D = v1alpha1.StatusDisabled
		P = v1alpha1.StatusPaused
		I = v1alpha1.StatusInProgress
		E = v1alpha1.StatusErroring
		U = v1alpha1.StatusUnknown
	)
	for _, tc := range []struct {
		in   []Status
		want Status
	}{
		{nil, C}, {[]Status{C, C}, C}, {[]Status{C, I, E}, I}, {[]Status{C, E, E}, E}, {[]Status{E, W, W}, E},
		{[]Status{B, C}, B}, {[]Status{B, W}, B}, {[]Status{W, W, C}, W}, {[]Status{P, P}, P}, {[]Status{D, C}, D},
		{[]Status{U, U}, U}, {[]Status{W, P}, U}, {[]Status{I}, I},
	} {
		if got := Aggregate(tc.in); got != tc.want {
			t.Errorf("Aggregate(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for s, want := range map[State]Status{v1alpha1.StateComplete: C, v1alpha1.StateErroring: E, v1alpha1.StateInProgress: I, v1alpha1.StateSkipped: U, v1alpha1.StateUnknown: U} {
		if got := StateToStatus(s); got != want {
			t.Errorf("StateToStatus(%s) = %s, want %s", s, got, want)
		}
	}
}
