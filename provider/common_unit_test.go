package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// System keys are exactly those under kubectl.kubernetes.io/, kubernetes.io/, k8s.io/ and
// gantry.dev/: subdomains such as app.kubernetes.io/ and team.gantry.dev/ are
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

// retryWrite retries transient errors (the API server's Timeout while etcd does not answer),
// returns a permanent error at once, and when the timeout ends says how long it retried.
func TestRetryWrite(t *testing.T) {
	etcdDown := apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
	calls := 0
	err := retryWrite(context.Background(), "apply", func(context.Context) error {
		if calls++; calls < 3 {
			return etcdDown
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("transient twice then success: err %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	invalid := apierrors.NewBadRequest("spec.image: Required value")
	if err := retryWrite(context.Background(), "apply", func(context.Context) error { calls++; return invalid }); err != invalid || calls != 1 {
		t.Errorf("permanent: err %v after %d calls, want the error after 1", err, calls)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	calls = 0
	err = retryWrite(ctx, "server-side apply of Performer ns/p", func(context.Context) error { calls++; return etcdDown })
	if !apierrors.IsTimeout(err) || calls < 2 || !strings.Contains(err.Error(), "server-side apply of Performer ns/p retried for") ||
		!strings.Contains(err.Error(), "attempts, until the timeout") {
		t.Errorf("until the timeout: err %v after %d calls", err, calls)
	}
}

// fakePrivate is a private state of plain keys.
type fakePrivate map[string][]byte

func (f fakePrivate) GetKey(_ context.Context, k string) ([]byte, diag.Diagnostics) { return f[k], nil }
func (f fakePrivate) SetKey(_ context.Context, k string, v []byte) diag.Diagnostics {
	if len(v) == 0 {
		delete(f, k)
		return nil
	}
	f[k] = v
	return nil
}

func objectAt(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetResourceVersion(rv)
	return u
}

// TestReadMark: a refresh reuses the state only for the object at the resourceVersion it was
// read from, by the same provider version; a create or update forgets the mark.
func TestReadMark(t *testing.T) {
	ctx := context.Background()
	v1, v2 := &providerData{version: "1.0.0"}, &providerData{version: "1.1.0"}
	priv := fakePrivate{}
	if readUnchanged(ctx, v1, priv, objectAt("10")) {
		t.Fatal("no mark yet: the state must be mapped")
	}
	markRead(ctx, v1, priv, objectAt("10"))
	cases := []struct {
		name string
		data *providerData
		rv   string
		want bool
	}{
		{"same object, same provider", v1, "10", true},
		{"object changed (new resourceVersion)", v1, "11", false},
		{"provider upgraded", v2, "10", false},
		{"object without resourceVersion", v1, "", false},
	}
	for _, c := range cases {
		if got := readUnchanged(ctx, c.data, priv, objectAt(c.rv)); got != c.want {
			t.Errorf("%s: readUnchanged = %v, want %v", c.name, got, c.want)
		}
	}
	forgetRead(ctx, priv)
	if readUnchanged(ctx, v1, priv, objectAt("10")) {
		t.Error("after forgetRead (a create or update wrote the state) the object must be mapped again")
	}
	priv[readPrivateKey] = []byte(`not json`)
	if readUnchanged(ctx, v1, priv, objectAt("10")) {
		t.Error("an unreadable mark must not be trusted")
	}
}
