package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A packed binary is a release the mirror serves (one platform, its sha256 and h1), packing the
// same binary again writes nothing, and a changed binary is packed again.
func TestPack(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "terraform-provider-gantry")
	if err := os.WriteFile(bin, []byte("binary v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		wrote, err := pack(bin, "0.1.0", "linux", "amd64", dir)
		if err != nil || wrote != want {
			t.Fatalf("pack %d: wrote %v, err %v; want wrote %v", i, wrote, err, want)
		}
	}
	r, err := readRelease(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := r["0.1.0"]["linux_amd64"]
	if !ok || a.sha == "" || a.h1 == "" {
		t.Fatalf("release %+v", r)
	}
	if err := os.WriteFile(bin, []byte("binary v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if wrote, err := pack(bin, "0.1.0", "linux", "amd64", dir); err != nil || !wrote {
		t.Fatalf("a changed binary: wrote %v, err %v", wrote, err)
	}
	r2, err := readRelease(dir)
	if err != nil || r2["0.1.0"]["linux_amd64"].h1 == a.h1 {
		t.Fatalf("a changed binary kept its h1 %s (err %v)", a.h1, err)
	}
}
