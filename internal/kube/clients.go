package kube

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Clients are the API clients one provider instance shares across all its resources.
type Clients struct {
	// Config is the REST configuration the clients were built from.
	Config *rest.Config
	// Dynamic reads and writes Gantry custom resources (unstructured).
	Dynamic dynamic.Interface
	// Core reads built-in kinds, e.g. the Events the wait engine reports.
	Core kubernetes.Interface
}

// NewClients builds Clients from cfg. It does not contact the cluster.
func NewClients(cfg *rest.Config) (*Clients, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("core client: %w", err)
	}
	return &Clients{Config: cfg, Dynamic: dyn, Core: core}, nil
}

// Lazy builds Clients on first use and then returns the same ones (or the same error) to
// every caller. The provider creates one in Configure, so plans never touch kubeconfig files
// or the cluster; the first Create/Read/Update/Delete/ImportState builds the clients.
type Lazy struct {
	once    sync.Once
	build   func() (*Clients, error)
	clients *Clients
	err     error
}

// NewLazy returns a Lazy whose Get calls build once.
func NewLazy(build func() (*Clients, error)) *Lazy {
	return &Lazy{build: build}
}

// LazyFromSettings returns a Lazy that resolves s against the environment (Settings.WithEnv
// with os.LookupEnv), builds the REST config (RESTConfig) and the clients on first use, and
// checks that the API server answers (Reach, bounded by the resolved ConnectTimeout): an API
// server that cannot be reached fails the first use, and every later one at once, with
// *UnreachableError. Once reached, nothing here bounds later requests.
func LazyFromSettings(s Settings) *Lazy {
	return NewLazy(func() (*Clients, error) {
		resolved, err := s.WithEnv(nil)
		if err != nil {
			return nil, err
		}
		cfg, err := RESTConfig(resolved)
		if err != nil {
			return nil, err
		}
		c, err := NewClients(cfg)
		if err != nil {
			return nil, err
		}
		if err := Reach(context.Background(), c, resolved.ConnectTimeout); err != nil {
			return nil, err
		}
		return c, nil
	})
}

// Get returns the shared clients, building them on the first call.
func (l *Lazy) Get() (*Clients, error) {
	l.once.Do(func() { l.clients, l.err = l.build() })
	return l.clients, l.err
}
