package reconciler

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// deleteUntilGoneFromCache returns as soon as the cache no longer holds the object, while the
// DELETE itself has not answered yet (the API server still releasing the Service's ClusterIP).
func TestDeleteUntilGoneFromCacheReturnsOnceGone(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "performer-a", Namespace: "ns", UID: "u1"}}
	release := make(chan struct{})
	deleted := make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(svc.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...) // gone from storage (and so from the cache) ...
			close(deleted)
			<-release // ... but the answer is held back
			return err
		},
	}).Build()
	defer close(release)
	done := make(chan error, 1)
	go func() { done <- deleteUntilGoneFromCache(context.Background(), c, svc) }()
	<-deleted
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("deleteUntilGoneFromCache: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("deleteUntilGoneFromCache waited for the DELETE's answer although the cache shows the Service gone")
	}
}

// While the cache still holds the object, the DELETE's error is what it returns.
func TestDeleteUntilGoneFromCacheReturnsTheDeleteError(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "performer-a", Namespace: "ns", UID: "u1"}}
	refused := errors.New("refused")
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(svc.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return refused },
	}).Build()
	if err := deleteUntilGoneFromCache(context.Background(), c, svc); !errors.Is(err, refused) {
		t.Fatalf("deleteUntilGoneFromCache = %v, want the DELETE's error", err)
	}
}
