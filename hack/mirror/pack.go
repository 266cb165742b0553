package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// packTime is every packed entry's modification time: a fixed one, so the same binary always
// packs into the same bytes (the same "zh:" hash in a lock file).
var packTime = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// pack writes into dir a release of one platform as the mirror reads it (no GoReleaser):
// <name>_<version>_<goos>_<goarch>.zip holding <name>_v<version> (binary's bytes, mode 0755) and
// <name>_<version>_SHA256SUMS. name is "terraform-provider-gantry". The zip's bytes depend only
// on the binary's, and a zip already holding them is left as it is; it reports whether it
// wrote. Errors: the binary cannot be read, or dir cannot be written.
func pack(binary, version, goos, goarch, dir string) (bool, error) {
	const name = "terraform-provider-gantry"
	bin, err := os.ReadFile(binary)
	if err != nil {
		return false, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: fmt.Sprintf("%s_v%s", name, version), Method: zip.Deflate, Modified: packTime}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return false, err
	}
	if _, err := w.Write(bin); err != nil {
		return false, err
	}
	if err := zw.Close(); err != nil {
		return false, err
	}
	zipFile := fmt.Sprintf("%s_%s_%s_%s.zip", name, version, goos, goarch)
	if old, err := os.ReadFile(filepath.Join(dir, zipFile)); err == nil && bytes.Equal(old, buf.Bytes()) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	sum := sha256.Sum256(buf.Bytes())
	if err := os.WriteFile(filepath.Join(dir, zipFile), buf.Bytes(), 0o644); err != nil {
		return false, err
	}
	sums := fmt.Sprintf("%s  %s\n", hex.EncodeToString(sum[:]), zipFile)
	return true, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_%s_SHA256SUMS", name, version)), []byte(sums), 0o644)
}
