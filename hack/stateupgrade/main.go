// Command stateupgrade is the JSON side of hack/state-upgrade.sh (DESIGN.md "Changing a
// resource's schema"), in Go rather than jq so a fresh clone needs only Go and bash:
// `fixture STATE OUT`, `push FIXTURE CURRENT OUT` and `schema-version SCHEMA TYPE`. A fixture is
// the CLI's state byte for byte except that each instance's read-mark resourceVersion (private
// state, readUnchanged) becomes "0": it belongs to the cluster the fixture came from, and a live
// object with the same one would make a refresh keep the fixture's attributes.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stateupgrade:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: stateupgrade fixture STATE OUT | push FIXTURE CURRENT OUT | schema-version SCHEMA TYPE")
	}
	switch {
	case args[0] == "fixture" && len(args) == 3:
		return fixture(args[1], args[2])
	case args[0] == "push" && len(args) == 4:
		return push(args[1], args[2], args[3])
	case args[0] == "schema-version" && len(args) == 3:
		return schemaVersion(args[1], args[2])
	}
	return fmt.Errorf("bad arguments %q", args)
}

// state is the part of a state file (format version 4) the harness reads.
type state struct {
	Version   int    `json:"version"`
	Serial    uint64 `json:"serial"`
	Lineage   string `json:"lineage"`
	Resources []struct {
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Instances []struct {
			SchemaVersion *int64 `json:"schema_version"`
		} `json:"instances"`
	} `json:"resources"`
}

func readState(path string) ([]byte, *state, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Version != 4 {
		return nil, nil, fmt.Errorf("%s: state format version %d, want 4", path, s.Version)
	}
	return b, &s, nil
}

// privateRE matches an instance's private state as the CLI writes it (base64 of the framework's
// JSON object of base64 values).
var privateRE = regexp.MustCompile(`"private": "([A-Za-z0-9+/=]*)"`)

// scrubPrivate returns the private state p (base64) with the "read" mark's rv set to "0".
func scrubPrivate(p string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(p)
	if err != nil {
		return "", err
	}
	var keys map[string][]byte
	if err := json.Unmarshal(raw, &keys); err != nil {
		return "", fmt.Errorf("private state: %w", err)
	}
	if mark, ok := keys["read"]; ok {
		var m map[string]any
		if err := json.Unmarshal(mark, &m); err != nil {
			return "", fmt.Errorf("private state's read mark: %w", err)
		}
		m["rv"] = "0"
		if keys["read"], err = json.Marshal(m); err != nil {
			return "", err
		}
	}
	out, err := json.Marshal(keys)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(out), nil
}

func fixture(in, out string) error {
	b, s, err := readState(in)
	if err != nil {
		return err
	}
	n := 0
	for _, r := range s.Resources {
		for _, i := range r.Instances {
			if r.Mode != "managed" || i.SchemaVersion == nil {
				return fmt.Errorf("%s: %s %s has an instance without schema_version, or is not managed", in, r.Mode, r.Type)
			}
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%s: no resource instances", in)
	}
	var scrubErr error
	b = privateRE.ReplaceAllFunc(b, func(m []byte) []byte {
		p, err := scrubPrivate(string(privateRE.FindSubmatch(m)[1]))
		if err != nil {
			scrubErr = err
			return m
		}
		return []byte(`"private": "` + p + `"`)
	})
	if scrubErr != nil {
		return fmt.Errorf("%s: %w", in, scrubErr)
	}
	return os.WriteFile(out, b, 0o644) //nolint:gosec // a fixture committed to the repository
}

func push(fixturePath, currentPath, out string) error {
	b, _, err := readState(fixturePath)
	if err != nil {
		return err
	}
	_, cur, err := readState(currentPath)
	if err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	if top["lineage"], err = json.Marshal(cur.Lineage); err != nil {
		return err
	}
	if top["serial"], err = json.Marshal(cur.Serial + 1); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(top); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o600)
}

func schemaVersion(schemaPath, typ string) error {
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var s struct {
		ProviderSchemas map[string]struct {
			ResourceSchemas map[string]struct {
				Version int64 `json:"version"`
			} `json:"resource_schemas"`
		} `json:"provider_schemas"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	for _, p := range s.ProviderSchemas {
		if r, ok := p.ResourceSchemas[typ]; ok {
			fmt.Println(r.Version)
			return nil
		}
	}
	return fmt.Errorf("%s: no resource type %s", schemaPath, typ)
}
