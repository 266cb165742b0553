package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state as Terraform 1.14 writes it, its one instance refreshed by the provider (private
// state {"read": {"rv": "391", "by": "0.1.0"}}).
const cliState = `{
  "version": 4,
  "terraform_version": "1.14.9",
  "serial": 2,
  "lineage": "72723b35-b78a-f5a0-e057-540646b5ef7c",
  "outputs": {},
  "resources": [
    {
      "mode": "managed",
      "type": "gantry_performer",
      "name": "fixture",
      "provider": "provider[\"registry.terraform.io/gantry-dev/gantry\"]",
      "instances": [
        {
          "schema_version": 0,
          "attributes": {
            "id": "stateupgrade/p"
          },
          "sensitive_attributes": [],
          "private": "eyJyZWFkIjoiZXlKeWRpSTZJak01TVNJc0ltSjVJam9pTUM0eExqQWlmUT09In0="
        }
      ]
    }
  ],
  "check_results": null
}
`

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFixture: the fixture is the CLI's bytes but for the private read mark's resourceVersion.
func TestFixture(t *testing.T) {
	in := write(t, "in.tfstate", cliState)
	out := filepath.Join(t.TempDir(), "out.tfstate")
	if err := fixture(in, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m := privateRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no private state in %s", b)
	}
	raw, _ := base64.StdEncoding.DecodeString(string(m[1]))
	var keys map[string][]byte
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	if got := string(keys["read"]); got != `{"by":"0.1.0","rv":"0"}` {
		t.Errorf("read mark %s, want rv 0 and by kept", got)
	}
	if rest := privateRE.ReplaceAllString(string(b), ""); rest != privateRE.ReplaceAllString(cliState, "") {
		t.Errorf("the fixture changed more than the private state:\n%s", b)
	}
}

// TestPush: the pushed state is the fixture with the working state's lineage and serial + 1.
func TestPush(t *testing.T) {
	fx := write(t, "fixture.tfstate", cliState)
	cur := write(t, "current.tfstate", `{"version": 4, "serial": 7, "lineage": "abc", "resources": []}`)
	out := filepath.Join(t.TempDir(), "push.tfstate")
	if err := push(fx, cur, out); err != nil {
		t.Fatal(err)
	}
	_, s, err := readState(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lineage != "abc" || s.Serial != 8 || len(s.Resources) != 1 || s.Resources[0].Type != "gantry_performer" {
		t.Errorf("pushed state %+v", s)
	}
}

func TestFixtureRefusesOtherStates(t *testing.T) {
	for name, content := range map[string]string{
		"format 3":     `{"version": 3}`,
		"no instances": `{"version": 4, "resources": []}`,
		"data source":  `{"version": 4, "resources": [{"mode": "data", "type": "gantry_nodes", "instances": [{"schema_version": 0}]}]}`,
	} {
		err := fixture(write(t, "in.tfstate", content), filepath.Join(t.TempDir(), "out"))
		if err == nil || !strings.Contains(err.Error(), "in.tfstate") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}
