package invariant

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Errorf and Fatalf; Fatalf ends the calling goroutine
// as testing's does.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.fatal = true
	runtime.Goexit()
}

func TestCheck(t *testing.T) {
	fails := func(int, int) error { return errors.New("broken") }
	holds := func(int, int) error { return nil }
	ran := false
	later := func(int, int) error { ran = true; return nil }
	for _, tt := range []struct {
		name      string
		invs      []Of[int, int]
		want      []string
		fatal     bool
		laterRuns bool
	}{
		{"all hold", []Of[int, int]{{Name: "a", Check: holds}, {Name: "l", Check: later}}, nil, false, true},
		{"non-fatal failures all reported", []Of[int, int]{{Name: "a", Check: fails}, {Name: "b", Check: fails}, {Name: "l", Check: later}},
			[]string{`invariant "a": broken`, `invariant "b": broken`}, false, true},
		{"fatal stops", []Of[int, int]{{Name: "a", Check: fails}, {Name: "f", Fatal: true, Check: fails}, {Name: "l", Check: later}},
			[]string{`invariant "a": broken`, `invariant "f": broken`}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ran = false
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() { defer close(done); Check(r, tt.invs, 1, 2) }()
			<-done
			if strings.Join(r.errs, "|") != strings.Join(tt.want, "|") || r.fatal != tt.fatal || ran != tt.laterRuns {
				t.Errorf("reported %q (fatal %v, later invariant ran %v), want %q (fatal %v, later ran %v)", r.errs, r.fatal, ran, tt.want, tt.fatal, tt.laterRuns)
			}
		})
	}
}
