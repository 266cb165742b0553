package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The config format of the removed HourglassExecutor operator (configFormat =
// hourglass-executor-v1alpha1), for executor images built for it; upstream is
// hourglass-operator's buildExecutorConfig before Layr-Labs/hourglass-monorepo@96df792 removed
// it (config.yaml in ConfigMap <name>-config at /etc/hourglass, port grpc 9090, /healthz and
// /readyz on 8080). Its CRD kept operatorKeys in plain text and wrote them nowhere; Gantry passes
// them as ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY from the Secret, as Hourglass's executor templates do.

// HourglassExecutorV1alpha1PerformerMode is performer_mode: kubernetes (the HourglassExecutor
// CRD's default; docker needs a Docker daemon the pod does not have).
const HourglassExecutorV1alpha1PerformerMode = "kubernetes"

// ConfigFormat is spec.hourglassCompat.configFormat ("" without hourglassCompat; the default
// v1alpha1.HourglassConfigFormatPonos when hourglassCompat leaves it unset).
func ConfigFormat(e *v1alpha1.Executor) string {
	c := e.Spec.HourglassCompat
	switch {
	case c == nil:
		return ""
	case c.ConfigFormat == "":
		return v1alpha1.HourglassConfigFormatPonos
	default:
		return c.ConfigFormat
	}
}

// HourglassExecutorV1alpha1 reports whether the Executor renders the HourglassExecutor
// operator's config (configFormat hourglass-executor-v1alpha1).
func HourglassExecutorV1alpha1(e *v1alpha1.Executor) bool {
	return ConfigFormat(e) == v1alpha1.HourglassConfigFormatExecutorV1alpha1
}

// ConfigMountPath is where the pod mounts the config: /etc/gantry, or /etc/hourglass with
// configFormat hourglass-executor-v1alpha1.
func ConfigMountPath(e *v1alpha1.Executor) string {
	if HourglassExecutorV1alpha1(e) {
		return v1alpha1.HourglassExecutorV1alpha1MountPath
	}
	return v1alpha1.ExecutorConfigMountPath
}

// ConfigFile is the config's path in the container: ConfigMountPath/ConfigKey.
func ConfigFile(e *v1alpha1.Executor) string { return ConfigMountPath(e) + "/" + ConfigKey(e) }

// RenderHourglassExecutorV1alpha1Config renders config.yaml as the HourglassExecutor
// operator's buildExecutorConfig wrote it and returns it with its hash (hex SHA-256):
// aggregator_endpoint from spec.aggregatorEndpoint, performer_mode kubernetes, log_level from
// spec.logLevel (default info), chains in spec order (name, rpc from rpcUrl, chain_id,
// task_mailbox_address) and kubernetes.namespace, the Executor's namespace (the only one its
// Role lets the executor create Performers in). The bytes are that operator's, leading
// newline and blank lines included; the one difference is that a '"' or '\' (or a control
// character) in a value is escaped, where that operator wrote it raw and broke the YAML.
// The config holds no key material.
func RenderHourglassExecutorV1alpha1Config(e *v1alpha1.Executor) (data string, hash string) {
	logLevel := string(e.Spec.LogLevel)
	if logLevel == "" {
		logLevel = v1alpha1.DefaultExecutorLogLevel
	}
	var b strings.Builder
	fmt.Fprintf(&b, `
aggregator_endpoint: "%s"
performer_mode: "%s"
log_level: "%s"
chains:
`, yamlEscape(e.Spec.AggregatorEndpoint), HourglassExecutorV1alpha1PerformerMode, yamlEscape(logLevel))
	for _, c := range e.Spec.Chains {
		fmt.Fprintf(&b, `
  - name: "%s"
    rpc: "%s"
    chain_id: %d
    task_mailbox_address: "%s"
`, yamlEscape(c.Name), yamlEscape(c.RPCURL), c.ChainID, yamlEscape(c.TaskMailboxAddress))
	}
	fmt.Fprintf(&b, `
kubernetes:
  namespace: "%s"
`, yamlEscape(e.Namespace))
	sum := sha256.Sum256([]byte(b.String()))
	return b.String(), hex.EncodeToString(sum[:])
}

// yamlEscape escapes s for the inside of a YAML double-quoted scalar: '\' and '"', control
// characters other than tab, and the Unicode line and paragraph separators (which YAML folds).
// Anything else, every value the CRD's patterns normally let through, is unchanged.
func yamlEscape(s string) string {
	if !strings.ContainsFunc(s, needsEscape) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return r == '\\' || r == '"' || (unicode.IsControl(r) && r != '\t') || r == '\u2028' || r == '\u2029'
}

// hourglassExecutorV1alpha1Container is the executor container as the HourglassExecutor
// operator ran it: the image's entrypoint with --config=/etc/hourglass/config.yaml, port grpc
// 9090 (TCP), liveness HTTP GET /healthz on 8080 (initial delay 30 s, period 10 s), readiness
// HTTP GET /readyz on 8080 (initial delay 5 s, period 5 s). No management port: that
// operator's executor had none.
func hourglassExecutorV1alpha1Container(c *corev1.Container, e *v1alpha1.Executor) {
	probe := func(path string, delay, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path,
			Port: intstr.FromInt32(v1alpha1.HourglassExecutorV1alpha1HealthPort)}}, InitialDelaySeconds: delay, PeriodSeconds: period}
	}
	c.Args = []string{"--config=" + ConfigFile(e)}
	c.Ports = []corev1.ContainerPort{{Name: GRPCPortName, ContainerPort: v1alpha1.HourglassExecutorV1alpha1GRPCPort, Protocol: corev1.ProtocolTCP}}
	c.LivenessProbe = probe("/healthz", 30, 10)
	c.ReadinessProbe = probe("/readyz", 5, 5)
}
