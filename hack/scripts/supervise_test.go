// Package scripts tests the hack/ shell scripts' own behaviour where a person depends on it:
// the background reconciler's supervisor (hack/reconciler.sh) stops with the reason instead of
// restarting a reconciler that cannot run. Each test runs the real script in a scratch copy of
// the repository layout (hack/ and a bin/), so nothing of the clone is touched.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scratch copies hack/lib.sh and hack/reconciler.sh into a new root with an empty
// .cache/cluster/kubeconfig (start needs one) and returns the root.
func scratch(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"hack", "bin", ".cache/cluster"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"lib.sh", "reconciler.sh"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "hack", f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".cache/cluster/kubeconfig"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("bash", filepath.Join(root, "hack/reconciler.sh"), "stop").Run() })
	return root
}

// start runs `hack/reconciler.sh start` in root and returns its output, time and exit error.
func start(t *testing.T, root string) (string, time.Duration, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "hack/reconciler.sh"), "start")
	begin := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), time.Since(begin), err
}

func TestSupervisorMissingBinary(t *testing.T) {
	root := scratch(t)
	out, _, err := start(t, root)
	if err == nil || !strings.Contains(out, "gantry-reconciler is missing or not executable: run 'make build'") {
		t.Fatalf("start with no bin/gantry-reconciler: err %v, output:\n%s", err, out)
	}
}

func TestSupervisorGivesUpOnCrashLoop(t *testing.T) {
	root := scratch(t)
	bin := filepath.Join(root, "bin/gantry-reconciler")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'boom: flag provided but not defined'\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, took, err := start(t, root)
	if err == nil {
		t.Fatalf("start of a reconciler that exits at once succeeded:\n%s", out)
	}
	for _, want := range []string{"boom: flag provided but not defined", "exited 5 times within 10s of starting (last status 2); giving up (crash loop)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("gave up after %s", took.Round(100*time.Millisecond))
}

func TestSupervisorGivesUpWhenTheBinaryGoes(t *testing.T) {
	root := scratch(t)
	bin := filepath.Join(root, "bin/gantry-reconciler")
	// Runs long enough to be started, deletes itself and exits: the restart finds no binary (127).
	script := "#!/bin/sh\nsleep 0.5\nrm -f \"$0\"\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, err := start(t, root)
	if err == nil || !strings.Contains(out, "could not be started (status 127") {
		t.Fatalf("start of a reconciler whose binary went: err %v, output:\n%s", err, out)
	}
}
