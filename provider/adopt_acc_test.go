package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// adoptRun is one adoption through the real CLI (Terraform >= 1.14), as the migration guide
// walks it: list is the adopt.tfquery.hcl list block; listed are strings the output of
// `terraform query -generate-config-out=generated.tf` must hold (the display name, warnings);
// generated are regular expressions generated.tf must match; planSays is a string the plan
// of the generated configuration must hold besides "1 to import, 0 to add, 1 to change".
type adoptRun struct {
	list      string
	listed    []string
	generated []string
	planSays  string
}

// run queries, checks generated.tf, plans and applies the generated configuration in a new
// working directory (destroyed when the test ends), failing the test at the first step that
// does not do what adoptRun says; it returns the CLI, the directory and generated.tf for the
// test's own checks.
func (a adoptRun) run(t *testing.T) (*cli, string, []byte) {
	t.Helper()
	cli := newCLI(t)
	dir := cli.workdir(t, requiredGantry+"\nprovider \"gantry\" {}\n")
	if err := os.WriteFile(filepath.Join(dir, "adopt.tfquery.hcl"), []byte(a.list), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := cli.run(t, dir, "query", "-generate-config-out=generated.tf", "-no-color")
	t.Logf("terraform query:\n%s", out)
	for _, want := range a.listed {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("terraform query exited %d, or its output lacks %q", code, want)
		}
	}
	t.Cleanup(func() {
		if out, code := cli.run(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color"); code != 0 {
			t.Errorf("destroy exited %d:\n%s", code, out)
		}
	})
	gen, err := os.ReadFile(filepath.Join(dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated.tf:\n%s", gen)
	for _, want := range a.generated {
		if !regexp.MustCompile(want).Match(gen) {
			t.Errorf("generated.tf lacks %s", want)
		}
	}
	out, code = cli.run(t, dir, "plan", "-input=false", "-no-color")
	t.Logf("plan of the generated configuration:\n%s", out)
	if code != 0 || !regexp.MustCompile(`Plan: 1 to import, 0 to add, 1 to change, 0 to destroy\.`).MatchString(out) || !strings.Contains(out, a.planSays) {
		t.Fatalf("plan of the generated configuration: exit %d, want 1 import that changes (creates the object) and %q", code, a.planSays)
	}
	if out, code := cli.run(t, dir, "apply", "-auto-approve", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("apply of the generated configuration exited %d:\n%s", code, out)
	}
	return cli, dir, gen
}

// planEmpty fails the test unless a plan of dir after the adoption's apply has no changes.
func (a adoptRun) planEmpty(t *testing.T, cli *cli, dir string) {
	t.Helper()
	if out, code := cli.run(t, dir, "plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after adopting: exit %d, want 0 (no changes):\n%s", code, out)
	}
}
