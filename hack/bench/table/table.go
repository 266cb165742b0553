// Package table is the one table `make bench` ends with: every bench program (hack/bench,
// hack/bench/packageset, hack/bench/scale) records its figures as rows with Add, and
// `go run ./hack/bench/table FILE` prints them as one markdown table, each figure beside its
// limit (measured in the same run) and its target.
//
// Rows go, one JSON object per line, to the file named by $GANTRY_BENCH_ROWS (hack/bench.sh
// sets it and empties it first); with the variable unset Add does nothing, so a program run
// by hand prints only its own output.
package table

import (
	"encoding/json"
	"fmt"
	"os"
)

// EnvRows names the variable holding the rows file.
const EnvRows = "GANTRY_BENCH_ROWS"

// Row is one figure. Value and Limit are in Unit; Limit is 0 when the figure has no measured
// limit (then Ratio is not computed). Target says what the figure should be, as the issue
// states it (e.g. "≤ 1.1× limit", "≤ 3 s"); Met tells whether it was, when Target is set.
type Row struct {
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Limit  float64 `json:"limit,omitempty"`
	// LimitIs says what the limit is (e.g. "client-go, QPS 200", "100 terraform_data").
	LimitIs string `json:"limit_is,omitempty"`
	// Ratio is the figure over its limit: Add sets Value ÷ Limit when it is 0; a program that
	// ran several rounds gives the median of the per-round ratios instead.
	Ratio  float64 `json:"ratio,omitempty"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
}

// Met returns a *bool for Row.Met.
func Met(ok bool) *bool { return &ok }

// Add appends rows to $GANTRY_BENCH_ROWS; errors are printed to stderr and otherwise ignored
// (a bench never fails on its table).
func Add(rows ...Row) {
	path := os.Getenv(EnvRows)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench table:", err)
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, r := range rows {
		if r.Ratio == 0 && r.Limit != 0 {
			r.Ratio = r.Value / r.Limit
		}
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "bench table:", err)
		}
	}
}
