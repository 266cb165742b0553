// Package invariant checks a state machine's named invariants on one decision: the oracle of
// the machines' table and fuzz tests (internal/executor, internal/performer,
// internal/workspace), each a table of Of in the order they are checked.
package invariant

import "testing"

// Of is one named property of a machine's decision D for its facts F. Check returns why it
// fails (nil: it holds). Fatal marks an invariant later ones rely on (e.g. the number of
// conditions): its failure stops the test instead of being reported beside the others.
type Of[F, D any] struct {
	Name  string
	Fatal bool
	Check func(f F, d D) error
}

// Check checks invs in order on (f, d) and reports each failing invariant through t as
// `invariant "<name>": <why>`: with t.Fatalf for a Fatal one (stopping the test, so no later
// invariant runs), with t.Errorf otherwise.
func Check[F, D any](t testing.TB, invs []Of[F, D], f F, d D) {
	t.Helper()
	for _, inv := range invs {
		err := inv.Check(f, d)
		switch {
		case err == nil:
		case inv.Fatal:
			t.Fatalf("invariant %q: %v", inv.Name, err)
		default:
			t.Errorf("invariant %q: %v", inv.Name, err)
		}
	}
}
