package failure_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// The classification table against a real API server (the local cluster: make cluster): every
// row the API server or the way to it can produce on demand, each error made for real and
// classified. Rows it cannot produce on demand (429, 5xx, a full Service CIDR) are in
// TestTransient and TestClassesReachable.
func TestClassesAgainstRealAPIServer(t *testing.T) {
	path := os.Getenv("GANTRY_TEST_KUBECONFIG")
	if path == "" {
		t.Skip("set GANTRY_TEST_KUBECONFIG to the local cluster's kubeconfig (make cluster)")
	}
	cfg, err := kube.RESTConfig(kube.Settings{ConfigPath: path, QPS: kube.DefaultQPS, Burst: kube.DefaultBurst})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "failure-" + rand.String(5)
	if _, err := c.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cms := c.Core.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Performer with one env value of size bytes (the CRD puts no bound on env values).
	performer := func(size int) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
			"metadata": map[string]any{"name": "big-" + rand.String(5), "namespace": ns},
			"spec":     map[string]any{"image": "ghcr.io/acme/performer:1", "env": map[string]any{"BIG": strings.Repeat("x", size)}},
		}}
		_, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		return err
	}
	// A clientset for the same API server with cfg changed by mod (transport and credentials).
	client := func(mod func(*rest.Config)) kubernetes.Interface {
		cc := rest.CopyConfig(cfg)
		mod(cc)
		cs, err := kubernetes.NewForConfig(cc)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	get := func(cs kubernetes.Interface) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
		return err
	}
	stale := cm.DeepCopy()
	cm.Data = map[string]string{"changed": "yes"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wrongUID := types.UID("00000000-0000-0000-0000-000000000000")

	for _, r := range []struct {
		name      string
		err       func() error
		row       string // the start of the Classes row's Name
		transient bool
	}{
		{"a 2 MiB Performer", func() error { return performer(2 << 20) }, "object too large for etcd", false},
		{"a 4 MiB Performer", func() error { return performer(4 << 20) }, "413 RequestEntityTooLarge", false},
		{"update with a stale resourceVersion", func() error { _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); return err },
			"409 Conflict (another writer", true},
		{"delete with a wrong UID precondition", func() error {
			return cms.Delete(ctx, "cm", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}})
		}, "409 Conflict on a UID precondition", false},
		{"create twice", func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
			return err
		}, "409 AlreadyExists", true},
		{"invalid name", func() error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, metav1.CreateOptions{})
			return err
		}, "422 Invalid", false},
		{"not found", func() error { _, err := cms.Get(ctx, "missing", metav1.GetOptions{}); return err }, "422 Invalid", false},
		{"forbidden (impersonating a user with no RBAC)", func() error {
			return get(client(func(c *rest.Config) { c.Impersonate = rest.ImpersonationConfig{UserName: "gantry-nobody"} }))
		}, "422 Invalid", false},
		{"HTTP to the HTTPS port", func() error {
			return get(client(func(c *rest.Config) {
				c.Host = strings.Replace(c.Host, "https://", "http://", 1)
				c.TLSClientConfig = rest.TLSClientConfig{}
			}))
		}, "422 Invalid", false},
		{"a certificate of an unknown authority", func() error {
			return get(client(func(c *rest.Config) { c.TLSClientConfig = rest.TLSClientConfig{} }))
		}, "the cluster's TLS certificate does not verify", false},
		{"a missing credential plugin", func() error {
			return get(client(func(c *rest.Config) {
				c.CertData, c.KeyData, c.CertFile, c.KeyFile = nil, nil, "", ""
				c.ExecProvider = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "gantry-no-such-plugin",
					InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
			}))
		}, "a client-go credential plugin", false},
		{"connection refused", func() error { return get(client(func(c *rest.Config) { c.Host = "https://127.0.0.1:1" })) },
			"connection refused", true},
		{"a deadline", func() error {
			ctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
			defer cancel()
			time.Sleep(time.Millisecond)
			_, err := cms.Get(ctx, "cm", metav1.GetOptions{})
			return err
		}, "a context that ended", true},
	} {
		t.Run(r.name, func(t *testing.T) {
			err := r.err()
			if err == nil {
				t.Fatal("no error")
			}
			c, ok := failure.Classify(err)
			if !ok || !strings.HasPrefix(c.Name, r.row) || c.Transient != r.transient || failure.Transient(err) != r.transient {
				t.Errorf("%v (%T, status %q) classified as %q (transient %v), want the row %q (transient %v)",
					err, err, apierrors.ReasonForError(err), c.Name, c.Transient, r.row, r.transient)
			}
			t.Logf("%s → %s (transient %v): %v", r.name, c.Name, c.Transient, err)
		})
	}
}
