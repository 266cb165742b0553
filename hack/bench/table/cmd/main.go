// Command cmd prints the rows recorded by the bench programs (package table) as one markdown
// table: figure, value, limit, ratio, target and whether it was met. Usage: go run
// ./hack/bench/table/cmd FILE.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gantry-dev/terraform-provider-gantry/hack/bench/table"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cmd ROWS_FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	fmt.Println("| figure | value | limit (measured in the same run) | ratio | target | met |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r table.Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		limit, ratio := "", ""
		if r.Limit != 0 {
			limit = fmt.Sprintf("%s %s", num(r.Limit), r.Unit)
			if r.LimitIs != "" {
				limit += " (" + r.LimitIs + ")"
			}
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		met := ""
		if r.Met != nil {
			met = map[bool]string{true: "met", false: "missed"}[*r.Met]
		}
		fmt.Printf("| %s | %s %s | %s | %s | %s | %s |\n", r.Figure, num(r.Value), r.Unit, limit, ratio, r.Target, met)
	}
}

// num prints v with two decimals below 100, as an integer above.
func num(v float64) string {
	if v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
