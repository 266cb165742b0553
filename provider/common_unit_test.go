package provider

import (
	"reflect"
	"testing"
)

// System keys are exactly those under kubectl.kubernetes.io/, kubernetes.io/, k8s.io/ and
// gantry.dev/ (issue 10 §6): subdomains such as app.kubernetes.io/ and team.gantry.dev/ are
// the user's and are kept by import and refresh.
func TestIsSystemKey(t *testing.T) {
	for k, want := range map[string]bool{
		"kubectl.kubernetes.io/last-applied-configuration": true,
		"kubernetes.io/hostname":                           true,
		"k8s.io/x":                                         true,
		"gantry.dev/owner":                                 true,
		"app.kubernetes.io/name":                           false,
		"app.kubernetes.io/managed-by":                     false,
		"team.gantry.dev/x":                                false,
		"example.k8s.io/x":                                 false,
		"notkubernetes.io/x":                               false,
		"name":                                             false,
		"gantry.dev":                                       false,
		"kubernetes.io":                                    false,
	} {
		if got := isSystemKey(k); got != want {
			t.Errorf("isSystemKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// readMeta (import and refresh) keeps every user key, drops system keys the prior state did
// not have and keeps those it had.
func TestReadMeta_keepsUserKeys(t *testing.T) {
	live := map[string]string{"app.kubernetes.io/name": "llm", "team.gantry.dev/x": "1", "plain": "p",
		"kubectl.kubernetes.io/last-applied-configuration": "{}", "gantry.dev/owner": "me"}
	got := readMeta(live, nil)
	want := map[string]string{"app.kubernetes.io/name": "llm", "team.gantry.dev/x": "1", "plain": "p"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("import: readMeta = %v, want %v", got, want)
	}
	got = readMeta(live, map[string]string{"gantry.dev/owner": "me"})
	want["gantry.dev/owner"] = "me"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refresh: readMeta = %v, want %v", got, want)
	}
}
