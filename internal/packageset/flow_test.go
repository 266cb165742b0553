package packageset

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// Skyhook "Stage Flow": every arrow is a row.
func TestNextStage(t *testing.T) {
	for _, tc := range []struct {
		from      Stage
		interrupt bool
		next      Stage
		done      bool
		illegal   bool
	}{
		{unin, false, appl, false, false},
		{appl, false, conf, false, false},
		{upgr, false, conf, false, false},
		{conf, false, "", true, false},
		{unin, true, appl, false, false},
		{appl, true, conf, false, false},
		{upgr, true, conf, false, false},
		{conf, true, intr, false, false},
		{intr, true, post, false, false},
		{post, true, "", true, false},
		{intr, false, "", false, true},
		{post, false, "", false, true},
		{"apply-check", false, "", false, true},
	} {
		next, done, err := NextStage(tc.from, tc.interrupt)
		var te *lifecycle.TransitionError
		if tc.illegal != errors.As(err, &te) || next != tc.next || done != tc.done {
			t.Errorf("NextStage(%s, %v) = %s, %v, %v; want %s, %v, illegal=%v", tc.from, tc.interrupt, next, done, err, tc.next, tc.done, tc.illegal)
		}
	}
	for s, want := range map[Stage]string{appl: "apply-check", conf: "config-check", upgr: "upgrade-check", unin: "uninstall-check", post: "post-interrupt-check", intr: ""} {
		if got := CheckOf(s); got != want {
			t.Errorf("CheckOf(%s) = %q, want %q", s, got, want)
		}
	}
}

// Skyhook "State": every legal (state, event) pair, and the illegal ones rejected.
func TestStateTable(t *testing.T) {
	ok := []struct {
		from State
		ev   Event
		to   State
	}{
		{"", EventStarted, v1alpha1.StateInProgress},
		{"", EventSkipped, v1alpha1.StateSkipped},
		{v1alpha1.StateUnknown, EventStarted, v1alpha1.StateInProgress},
		{v1alpha1.StateInProgress, EventStarted, v1alpha1.StateInProgress},
		{v1alpha1.StateInProgress, EventSucceeded, v1alpha1.StateComplete},
		{v1alpha1.StateInProgress, EventFailed, v1alpha1.StateErroring},
		{v1alpha1.StateErroring, EventRetry, v1alpha1.StateInProgress},
		{v1alpha1.StateErroring, EventFailed, v1alpha1.StateErroring},
		{v1alpha1.StateSkipped, EventPromoted, v1alpha1.StateComplete},
	}
	for _, tc := range ok {
		if got, err := Apply(tc.from, tc.ev); err != nil || got != tc.to {
			t.Errorf("Apply(%q, %s) = %s, %v; want %s", tc.from, tc.ev, got, err, tc.to)
		}
	}
	for _, tc := range []struct {
		from State
		ev   Event
	}{
		{"", EventSucceeded}, {v1alpha1.StateComplete, EventStarted}, {v1alpha1.StateComplete, EventFailed},
		{v1alpha1.StateSkipped, EventSucceeded}, {v1alpha1.StateErroring, EventSucceeded}, {"bogus", EventStarted},
	} {
		var te *lifecycle.TransitionError
		if _, err := Apply(tc.from, tc.ev); !errors.As(err, &te) {
			t.Errorf("Apply(%q, %s) = %v, want a *lifecycle.TransitionError", tc.from, tc.ev, err)
		}
	}
}

func TestMergeInterrupts(t *testing.T) {
	svc := func(s ...string) v1alpha1.Interrupt {
		return v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: s}
	}
	reboot := v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	all := v1alpha1.Interrupt{Type: v1alpha1.InterruptRestartAllServices}
	noop := v1alpha1.Interrupt{Type: v1alpha1.InterruptNoop}
	for _, tc := range []struct {
		in     []v1alpha1.Interrupt
		want   v1alpha1.Interrupt
		winner int
	}{
		{[]v1alpha1.Interrupt{noop}, noop, 0},
		{[]v1alpha1.Interrupt{noop, svc("a")}, svc("a"), 1},
		{[]v1alpha1.Interrupt{svc("b"), svc("a", "b")}, svc("a", "b"), 0},
		{[]v1alpha1.Interrupt{svc("a"), all, noop}, all, 1},
		{[]v1alpha1.Interrupt{all, reboot, svc("x")}, reboot, 1},
		{[]v1alpha1.Interrupt{reboot, reboot}, reboot, 0},
	} {
		got, w, err := MergeInterrupts(tc.in)
		if err != nil || w != tc.winner || got.Type != tc.want.Type || strings.Join(got.Services, ",") != strings.Join(tc.want.Services, ",") {
			t.Errorf("MergeInterrupts(%v) = %v, %d, %v; want %v, %d", tc.in, got, w, err, tc.want, tc.winner)
		}
	}
	if _, _, err := MergeInterrupts(nil); err == nil {
		t.Error("empty merge accepted")
	}
	if _, _, err := MergeInterrupts([]v1alpha1.Interrupt{{Type: "kexec"}}); err == nil {
		t.Error("unknown type accepted")
	}
}
