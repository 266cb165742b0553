package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// childProcess returns the PID of a process whose parent is ppid and whose command line
// contains name (0 when there is none), from /proc.
func childProcess(t *testing.T, ppid int, name string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(ppid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if strings.Contains(string(cmdline), name) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	return 0
}

// alive reports whether pid runs (a zombie, exited but not reaped, is not alive).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// A provider whose terraform is killed (SIGKILL to terraform alone, as an OOM kill or a
// cancelled CI job does) exits by itself instead of living on reparented with
// its sockets and watches open. The apply waits on a performer held on a node no kubelet runs,
// so the provider is mid-wait when terraform dies.
func TestAccProvider_exitsWhenTerraformIsKilled(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	c := testClients(t)
	ns := testNamespace(t, c, "acc-orphan")
	pool := "acc-orphan-" + rand.String(5)
	slowNode(t, c, pool)
	cli := newCLI(t)
	dir := cli.workdir(t, interruptConfig(ns, pool, "orphan", 1))

	cmd, out := cli.command(dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var provider int
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if provider != 0 {
			_ = syscall.Kill(provider, syscall.SIGKILL)
		}
	}()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if provider == 0 {
			provider = childProcess(t, cmd.Process.Pid, "terraform-provider-gantry")
		}
		if provider != 0 {
			if _, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), "orphan-0", metav1.GetOptions{}); err == nil {
				break // written: the provider is waiting on it
			}
		}
		select {
		case err := <-done:
			t.Fatalf("terraform apply ended (%v) before the provider was waiting:\n%s", err, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no provider process waiting on orphan-0 within 3m:\n%s", out.String())
		}
	}
	time.Sleep(time.Second) // inside the wait
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("terraform exited cleanly after SIGKILL")
	}
	t.Logf("killed terraform (pid %d); its provider is pid %d", cmd.Process.Pid, provider)
	for i := 0; alive(provider); i++ {
		if i == 600 {
			t.Fatalf("the provider (pid %d) still runs 60s after terraform was killed", provider)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
