package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
)

// DefaultConnectTimeout bounds how long the provider tries to reach an API server it has not
// reached yet (connect_timeout, KUBE_CONNECT_TIMEOUT). It bounds only the first contact of a
// provider process: once the server has answered, waits ride out outages until their own
// timeouts.
const DefaultConnectTimeout = 20 * time.Second

// EnvConnectTimeout is the environment variable read when connect_timeout is not set: a Go
// duration such as "20s" or "1m".
const EnvConnectTimeout = "KUBE_CONNECT_TIMEOUT"

// ParseConnectTimeout parses a connect timeout: a Go duration ("20s", "1m30s") greater than
// zero. The error says what is wrong with v.
func ParseConnectTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. \"20s\", \"1m\")", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be greater than zero", v)
	}
	return d, nil
}

// UnreachableError reports an API server the provider never reached: no HTTP response within
// Timeout (Permanent false), or a certificate or protocol error that retrying cannot fix
// (Permanent true: failure.Classes). Err is the last transport error (dial, DNS, TLS, credential plugin).
type UnreachableError struct {
	// Host is the API server URL from the configuration.
	Host string
	// Timeout is the bound that was applied (connect_timeout).
	Timeout time.Duration
	// Attempts is the number of requests made.
	Attempts int
	// Permanent is true when the error was not retried (TLS verification, HTTP vs HTTPS).
	Permanent bool
	// Err is the last error.
	Err error
}

func (e *UnreachableError) Error() string {
	if e.Permanent && e.Err != nil && strings.Contains(e.Err.Error(), "getting credentials: exec: ") {
		return fmt.Sprintf("cannot connect to the Kubernetes API server %s: %v (not retried: the credential plugin "+
			"is missing or fails; check exec.command, which must be in PATH on the machine Terraform runs on, and its args and env, "+
			"or the users[].exec of the kubeconfig)", e.Host, e.Err)
	}
	if e.Permanent {
		return fmt.Sprintf("cannot connect to the Kubernetes API server %s: %v (not retried: a certificate or "+
			"protocol error does not go away by itself; check host's scheme and port, cluster_ca_certificate, "+
			"tls_server_name and insecure)", e.Host, e.Err)
	}
	return fmt.Sprintf("cannot reach the Kubernetes API server %s within %s (connect_timeout, %s; %d attempts): %v",
		e.Host, e.Timeout, EnvConnectTimeout, e.Attempts, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Reach checks that the API server of c answers, by GETting /version (readable without any
// RBAC grant), retrying with backoff until timeout (> 0) has passed or ctx ends. Any HTTP
// response counts as reached, even 401 or 403: credentials and permissions are reported by
// the requests that need them. It returns nil when reached, else *UnreachableError quoting
// the last dial, DNS, TLS or credential-plugin error; certificate verification failures and
// HTTP/HTTPS mismatches (either way round) end it at once.
func Reach(ctx context.Context, c *Clients, timeout time.Duration) error {
	rc := c.Core.Discovery().RESTClient()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := kwait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: int(^uint(0) >> 1), Cap: 3 * time.Second}
	ue := &UnreachableError{Host: c.Config.Host, Timeout: timeout}
	for {
		ue.Attempts++
		err := rc.Get().AbsPath("/version").Do(ctx).Error()
		if httpToHTTPS(err) {
			ue.Err, ue.Permanent = fmt.Errorf("the server answers HTTPS on this port (%s): use an https:// host", statusBody(err)), true
			return ue
		}
		if err == nil || isAPIStatus(err) {
			return nil
		}
		if ctx.Err() == nil || ue.Err == nil {
			ue.Err = err // keep the last error that is not just the deadline
		}
		if permanent(err) {
			ue.Permanent = true
			return ue
		}
		t := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return ue
		case <-t.C:
		}
	}
}

// httpToHTTPS reports the 400 a Go HTTPS server (the API server) sends to a plain HTTP request.
func httpToHTTPS(err error) bool {
	return apierrors.IsBadRequest(err) && strings.Contains(statusBody(err), "HTTP request to an HTTPS server")
}

// statusBody returns the server's own words from an API status error: its message and causes.
func statusBody(err error) string {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return ""
	}
	st := s.Status()
	parts := []string{st.Message}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			parts = append(parts, strings.TrimSpace(c.Message))
		}
	}
	return strings.Join(parts, ": ")
}

func isAPIStatus(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}

// permanent: err is not worth retrying (failure.Classes): a certificate that does not verify,
// HTTP and HTTPS mixed up, a credential plugin that is missing or fails.
func permanent(err error) bool {
	c, ok := failure.Classify(err)
	return ok && !c.Transient
}
