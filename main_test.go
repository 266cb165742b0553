package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid runs (a zombie, exited but not reaped, is not alive).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// The provider exits by itself once the process that started it is killed,
// even when nothing it writes could fail on a closed pipe: it is started by a shell as a
// plugin server (Terraform's handshake cookie, protocol 6), its output going to a file; the
// shell is killed with SIGKILL and the provider, reparented, must be gone soon after.
func TestProviderExitsWithItsParent(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform-provider-gantry")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	logFile := filepath.Join(dir, "provider.log")
	sh := exec.Command("sh", "-c", fmt.Sprintf("%q >%q 2>&1 & echo $!; wait", bin, logFile))
	sh.Env = append(os.Environ(), "TF_PLUGIN_MAGIC_COOKIE=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
		"PLUGIN_PROTOCOL_VERSIONS=6")
	stdout, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("shell printed %q", line)
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
	// Serving: go-plugin's handshake line "1|6|unix|...|grpc|" is in its output.
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(logFile); strings.Contains(string(b), "|6|") {
			break
		}
		if i == 300 || !alive(pid) {
			b, _ := os.ReadFile(logFile)
			t.Fatalf("the provider is not serving (alive %v):\n%s", alive(pid), b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sh.Wait()
	for i := 0; alive(pid); i++ {
		if i == 300 {
			b, _ := os.ReadFile(logFile)
			t.Fatalf("the provider (pid %d) still runs 30s after its parent was killed:\n%s", pid, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(logFile)
	if !strings.Contains(string(b), "is gone") {
		t.Errorf("the provider exited without saying why:\n%s", b)
	}
}
