package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Hourglass compatibility mode (spec.hourglassCompat): the config an unmodified Hourglass
// executor (ponos) image reads (Layr-Labs/hourglass-monorepo@11f1554, ponos ExecutorConfig).
// ponos reads keys from its config file only, but viper (AutomaticEnv, prefix EXECUTOR_) lets
// EXECUTOR__<PATH> override a key the file has. So the file holds empty placeholders and the pods
// get the keys as those variables from the Secret: no key material in the ConfigMap, the
// Executor or Terraform state.
const (
	// HourglassOperatorKeyEnv fills operator.operatorPrivateKey.privateKey (operatorKeys.ecdsaKey).
	HourglassOperatorKeyEnv = "EXECUTOR__OPERATOR_OPERATORPRIVATEKEY_PRIVATEKEY"
	// HourglassECDSASigningKeyEnv fills operator.signingKeys.ecdsa.privateKey (operatorKeys.ecdsaKey,
	// when there is no BLS keystore).
	HourglassECDSASigningKeyEnv = "EXECUTOR__OPERATOR_SIGNINGKEYS_ECDSA_PRIVATEKEY"
	// HourglassBLSKeystoreEnv fills operator.signingKeys.bls.keystore (operatorKeys.blsKeystoreKey).
	HourglassBLSKeystoreEnv = "EXECUTOR__OPERATOR_SIGNINGKEYS_BLS_KEYSTORE"
	// HourglassBLSPasswordEnv fills operator.signingKeys.bls.password (operatorKeys.blsKeystorePasswordKey).
	HourglassBLSPasswordEnv = "EXECUTOR__OPERATOR_SIGNINGKEYS_BLS_PASSWORD"
	// The remote signer's TLS material (operatorKeys.remoteSigner) fills
	// remoteSignerConfig.caCert, .cert and .key of operator.operatorPrivateKey and, without a
	// BLS keystore, of operator.signingKeys.ecdsa: these variables, valueFrom secretKeyRef of
	// caSecretName (key ca.crt) and clientCertSecretName (keys tls.crt, tls.key).
	HourglassRemoteCAEnv          = "EXECUTOR__OPERATOR_OPERATORPRIVATEKEY_REMOTESIGNERCONFIG_CACERT"
	HourglassRemoteCertEnv        = "EXECUTOR__OPERATOR_OPERATORPRIVATEKEY_REMOTESIGNERCONFIG_CERT"
	HourglassRemoteKeyEnv         = "EXECUTOR__OPERATOR_OPERATORPRIVATEKEY_REMOTESIGNERCONFIG_KEY"
	HourglassSigningRemoteCAEnv   = "EXECUTOR__OPERATOR_SIGNINGKEYS_ECDSA_REMOTESIGNERCONFIG_CACERT"
	HourglassSigningRemoteCertEnv = "EXECUTOR__OPERATOR_SIGNINGKEYS_ECDSA_REMOTESIGNERCONFIG_CERT"
	HourglassSigningRemoteKeyEnv  = "EXECUTOR__OPERATOR_SIGNINGKEYS_ECDSA_REMOTESIGNERCONFIG_KEY"
	// RemoteSignerCAKey is the key of operatorKeys.remoteSigner.caSecretName holding the CA
	// certificate (as cert-manager names it); RemoteSignerCertKey and RemoteSignerKeyKey those of
	// the kubernetes.io/tls Secret clientCertSecretName.
	RemoteSignerCAKey   = "ca.crt"
	RemoteSignerCertKey = corev1.TLSCertKey
	RemoteSignerKeyKey  = corev1.TLSPrivateKeyKey
	// HourglassConnectionTimeout is kubernetes.connectionTimeout (Hourglass's default, 30s).
	HourglassConnectionTimeout = "30s"
	// HourglassStorageType is storage.type: memory, as every Hourglass sample config.
	HourglassStorageType = "memory"
	// hourglassCommand is the executor binary of Hourglass's image (ponos/charts/hourglass values.yaml).
	hourglassCommand = "executor"
)

// HourglassCompat reports whether the Executor runs in Hourglass compatibility mode.
func HourglassCompat(e *v1alpha1.Executor) bool { return e.Spec.HourglassCompat != nil }

// ManagesPerformers reports whether the executor's pods run as executor-<name> with the
// right to manage Performers: spec.managePerformers (Gantry's Performers) or Hourglass
// compatibility mode (Hourglass's, which its executor creates for each AVS in kubernetes mode).
func ManagesPerformers(e *v1alpha1.Executor) bool {
	return e.Spec.ManagePerformers || HourglassCompat(e)
}

// ConfigKey is the ConfigMap key and file name of the config: executor-config.yaml, or
// config.yaml in Hourglass compatibility mode.
func ConfigKey(e *v1alpha1.Executor) string {
	if HourglassCompat(e) {
		return v1alpha1.HourglassConfigKey
	}
	return v1alpha1.ExecutorConfigKey
}

// HourglassConfig is ponos's ExecutorConfig as YAML, with the same keys (camelCase) and only
// the fields Gantry sets. Fields ponos has that are not here (performerNetworkName: docker
// mode; contracts, overrideContracts: embedded per chain ID; authentication) are left unset,
// as in Hourglass's sample configs.
type HourglassConfig struct {
	Debug                    bool                    `json:"debug,omitempty"`
	GRPCPort                 int32                   `json:"grpcPort"`
	ManagementServerGRPCPort int32                   `json:"managementServerGrpcPort"`
	Operator                 HourglassOperator       `json:"operator"`
	L1Chain                  HourglassChain          `json:"l1Chain"`
	AVSPerformers            []HourglassAVSPerformer `json:"avsPerformers"`
	Kubernetes               HourglassKubernetes     `json:"kubernetes"`
	Storage                  HourglassStorage        `json:"storage"`
}

// HourglassOperator is ponos config.OperatorConfig; the key fields are empty placeholders
// (filled from the environment, see HourglassOperatorKeyEnv).
type HourglassOperator struct {
	Address            string               `json:"address"`
	OperatorPrivateKey HourglassECDSAKey    `json:"operatorPrivateKey"`
	SigningKeys        HourglassSigningKeys `json:"signingKeys"`
}

// HourglassECDSAKey is ponos config.ECDSAKeyConfig: a local key (an empty privateKey placeholder)
// or, with operatorKeys.remoteSigner, the remote signer. The flag is written under both keys:
// ponos's YAML/JSON parsers read "remoteSigner", but its executor loads the file with viper
// (mapstructure, by field name), which reads only "useRemoteSigner"; with one key alone the
// executor would ignore the signer and fail for want of a private key.
type HourglassECDSAKey struct {
	UseRemoteSigner    bool                   `json:"remoteSigner,omitempty"`
	UseRemoteSignerKey bool                   `json:"useRemoteSigner,omitempty"`
	RemoteSignerConfig *HourglassRemoteSigner `json:"remoteSignerConfig,omitempty"`
	PrivateKey         *string                `json:"privateKey,omitempty"`
}

// HourglassRemoteSigner is ponos config.RemoteSignerConfig. caCert, cert and key are empty
// placeholders, present only when their Secret is named (filled from the environment, see
// HourglassRemoteCAEnv), so no TLS material is in the ConfigMap.
type HourglassRemoteSigner struct {
	URL         string  `json:"url"`
	CACert      *string `json:"caCert,omitempty"`
	Cert        *string `json:"cert,omitempty"`
	Key         *string `json:"key,omitempty"`
	FromAddress string  `json:"fromAddress"`
	PublicKey   string  `json:"publicKey"`
}

// HourglassSigningKeys is ponos config.SigningKeys: a BLS keystore or an ECDSA key.
type HourglassSigningKeys struct {
	BLS   *HourglassBLSKey   `json:"bls,omitempty"`
	ECDSA *HourglassECDSAKey `json:"ecdsa,omitempty"`
}

// HourglassBLSKey is ponos config.SigningKey with the keystore given inline.
type HourglassBLSKey struct {
	Keystore string `json:"keystore"`
	Password string `json:"password"`
}

// HourglassChain is ponos executorConfig.Chain.
type HourglassChain struct {
	RPCURL  string `json:"rpcUrl"`
	ChainID int64  `json:"chainId"`
}

// HourglassAVSPerformer is one ponos executorConfig.AvsPerformerConfig, always in kubernetes
// deployment mode.
type HourglassAVSPerformer struct {
	Image               *HourglassImage `json:"image,omitempty"`
	ProcessType         string          `json:"processType"`
	AVSAddress          string          `json:"avsAddress"`
	AVSRegistrarAddress string          `json:"avsRegistrarAddress,omitempty"`
	Envs                []HourglassEnv  `json:"envs,omitempty"`
	DeploymentMode      string          `json:"deploymentMode"`
}

// HourglassImage is ponos executorConfig.PerformerImage.
type HourglassImage struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
}

// HourglassEnv is ponos config.AVSPerformerEnv with a plain value.
type HourglassEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HourglassKubernetes is ponos executorConfig.KubernetesConfig.
type HourglassKubernetes struct {
	Namespace         string `json:"namespace"`
	OperatorNamespace string `json:"operatorNamespace"`
	CRDGroup          string `json:"crdGroup"`
	CRDVersion        string `json:"crdVersion"`
	ConnectionTimeout string `json:"connectionTimeout"`
	InCluster         bool   `json:"inCluster"`
}

// HourglassStorage is ponos executorConfig.StorageConfig.
type HourglassStorage struct {
	Type string `json:"type"`
}

// SplitImage splits "repository:tag" at the last ':' after the last '/' (ponos's
// image.repository and image.tag); ok is false without a tag.
func SplitImage(image string) (repository, tag string, ok bool) {
	i := strings.LastIndex(image, ":")
	if i <= strings.LastIndex(image, "/") || i == len(image)-1 {
		return image, "", false
	}
	return image[:i], image[i+1:], true
}

// L1Chain is the chain rendered as Hourglass's l1Chain: spec.hourglassCompat.l1Chain, or the
// first chain (the zero Chain when there is none).
func L1Chain(e *v1alpha1.Executor) v1alpha1.Chain {
	for _, c := range e.Spec.Chains {
		if e.Spec.HourglassCompat != nil && c.Name == e.Spec.HourglassCompat.L1Chain {
			return c
		}
	}
	if len(e.Spec.Chains) > 0 {
		return e.Spec.Chains[0]
	}
	return v1alpha1.Chain{}
}

// hourglassECDSA is an ECDSA key of the Hourglass config (operator.operatorPrivateKey, and
// signingKeys.ecdsa without a BLS keystore): the empty privateKey placeholder, or with
// operatorKeys.remoteSigner Hourglass's remote signer: remoteSigner true and remoteSignerConfig
// with the URL, the public key, fromAddress (address, the operator's, unless given) and empty
// caCert, cert and key placeholders for the Secrets named.
func hourglassECDSA(address string, k v1alpha1.OperatorKeys) HourglassECDSAKey {
	rs := k.RemoteSigner
	if rs == nil {
		empty := ""
		return HourglassECDSAKey{PrivateKey: &empty}
	}
	from := rs.FromAddress
	if from == "" {
		from = address
	}
	cfg := &HourglassRemoteSigner{URL: rs.URL, FromAddress: from, PublicKey: rs.PublicKey}
	placeholder := func() *string { s := ""; return &s }
	if rs.CASecretName != "" {
		cfg.CACert = placeholder()
	}
	if rs.ClientCertSecretName != "" {
		cfg.Cert, cfg.Key = placeholder(), placeholder()
	}
	return HourglassECDSAKey{UseRemoteSigner: true, UseRemoteSignerKey: true, RemoteSignerConfig: cfg}
}

// HourglassOperatorOf is Hourglass's operator section (ponos config.OperatorConfig) for the
// operator at address with keys k, as both Hourglass's executor and aggregator read it:
// operatorPrivateKey the ECDSA key (hourglassECDSA: an empty placeholder, or the remote
// signer); signingKeys.bls an empty keystore and password placeholder when k has a BLS
// keystore, else signingKeys.ecdsa the same ECDSA key. The placeholders are filled from the
// environment (HourglassKeyEnv); no key material is in the result.
func HourglassOperatorOf(address string, k v1alpha1.OperatorKeys) HourglassOperator {
	op := HourglassOperator{Address: address, OperatorPrivateKey: hourglassECDSA(address, k)}
	if k.BLSKeystoreKey != "" {
		op.SigningKeys.BLS = &HourglassBLSKey{}
	} else {
		key := hourglassECDSA(address, k)
		op.SigningKeys.ECDSA = &key
	}
	return op
}

// RenderHourglassConfig renders config.yaml in Hourglass's own format (ponos ExecutorConfig) and
// returns it with its hex SHA-256; deterministic (env sorted by name), so the hash changes only
// with the spec. Key fields are empty placeholders filled from the environment (or the remote
// signer); logLevel debug sets debug, ponos's only level; operatorNamespace is set because ponos
// requires it. The error is the YAML encoder's.
func RenderHourglassConfig(e *v1alpha1.Executor) (data string, hash string, err error) {
	l1 := L1Chain(e)
	c := HourglassConfig{
		Debug:                    e.Spec.LogLevel == "debug",
		GRPCPort:                 GRPCPort(e),
		ManagementServerGRPCPort: ManagementPort(e),
		Operator:                 HourglassOperatorOf(e.Spec.OperatorAddress, e.Spec.OperatorKeys),
		L1Chain:                  HourglassChain{RPCURL: l1.RPCURL, ChainID: l1.ChainID},
		AVSPerformers:            []HourglassAVSPerformer{},
		Kubernetes: HourglassKubernetes{Namespace: e.Namespace, OperatorNamespace: e.Namespace,
			CRDGroup: v1alpha1.HourglassPerformerGroup, CRDVersion: v1alpha1.GroupVersion.Version,
			ConnectionTimeout: HourglassConnectionTimeout, InCluster: true},
		Storage: HourglassStorage{Type: HourglassStorageType},
	}
	for _, a := range e.Spec.AVSPerformers {
		p := HourglassAVSPerformer{ProcessType: a.ProcessType, AVSAddress: a.AVSAddress,
			AVSRegistrarAddress: a.AVSRegistrarAddress, DeploymentMode: "kubernetes"}
		if p.ProcessType == "" {
			p.ProcessType = v1alpha1.DefaultProcessType
		}
		if a.Image != "" {
			repo, tag, _ := SplitImage(a.Image)
			p.Image = &HourglassImage{Repository: repo, Tag: tag}
		}
		names := make([]string, 0, len(a.Env))
		for n := range a.Env {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p.Envs = append(p.Envs, HourglassEnv{Name: n, Value: a.Env[n]})
		}
		c.AVSPerformers = append(c.AVSPerformers, p)
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	return string(b), hex.EncodeToString(sum[:]), nil
}

// HourglassKeyEnv is the container environment that carries operator keys k into Hourglass's
// config (HourglassOperatorOf) of an executor in Hourglass compatibility mode or of an
// aggregator: the variables that override the config's placeholders (see
// HourglassOperatorKeyEnv; Hourglass's aggregator loads its config with the same prefix,
// EXECUTOR_), each valueFrom secretKeyRef of k.SecretName, and the remote signer's TLS
// Secrets (remoteSignerEnv).
func HourglassKeyEnv(k v1alpha1.OperatorKeys) []corev1.EnvVar {
	env := remoteSignerEnv(k)
	if k.SecretName == "" {
		return env
	}
	ref := func(name, key string) corev1.EnvVar {
		return secretEnv(name, k.SecretName, key)
	}
	if k.ECDSAKey != "" {
		env = append(env, ref(HourglassOperatorKeyEnv, k.ECDSAKey))
		if k.BLSKeystoreKey == "" {
			env = append(env, ref(HourglassECDSASigningKeyEnv, k.ECDSAKey))
		}
	}
	if k.BLSKeystoreKey != "" {
		env = append(env, ref(HourglassBLSKeystoreEnv, k.BLSKeystoreKey))
	}
	if k.BLSKeystorePasswordKey != "" {
		env = append(env, ref(HourglassBLSPasswordEnv, k.BLSKeystorePasswordKey))
	}
	return env
}

// secretEnv is the variable name valueFrom secretKeyRef secret[key].
func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

// remoteSignerEnv are the variables that fill the remote signer's TLS placeholders
// (HourglassRemoteCAEnv and the rest) from caSecretName and clientCertSecretName, for
// operator.operatorPrivateKey and, without a BLS keystore, operator.signingKeys.ecdsa; nil
// without operatorKeys.remoteSigner or TLS Secrets.
func remoteSignerEnv(k v1alpha1.OperatorKeys) []corev1.EnvVar {
	rs := k.RemoteSigner
	if rs == nil {
		return nil
	}
	signing := k.BLSKeystoreKey == ""
	var env []corev1.EnvVar
	if rs.CASecretName != "" {
		env = append(env, secretEnv(HourglassRemoteCAEnv, rs.CASecretName, RemoteSignerCAKey))
		if signing {
			env = append(env, secretEnv(HourglassSigningRemoteCAEnv, rs.CASecretName, RemoteSignerCAKey))
		}
	}
	if rs.ClientCertSecretName != "" {
		env = append(env, secretEnv(HourglassRemoteCertEnv, rs.ClientCertSecretName, RemoteSignerCertKey),
			secretEnv(HourglassRemoteKeyEnv, rs.ClientCertSecretName, RemoteSignerKeyKey))
		if signing {
			env = append(env, secretEnv(HourglassSigningRemoteCertEnv, rs.ClientCertSecretName, RemoteSignerCertKey),
				secretEnv(HourglassSigningRemoteKeyEnv, rs.ClientCertSecretName, RemoteSignerKeyKey))
		}
	}
	return env
}

// hourglassAccessRules are the Role rules of an executor in Hourglass compatibility mode: what
// Hourglass's own executor Role allows on its performers
// (hourglass-operator/templates/examples/basic-executor.yaml: Performers create, delete, get,
// list, patch, update, watch; their status get; Pods and Services get, list, watch), in the
// hourglass.eigenlayer.io group its executor creates them in.
func hourglassAccessRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.HourglassPerformerGroup}, Resources: []string{"performers"}, Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		{APIGroups: []string{v1alpha1.HourglassPerformerGroup}, Resources: []string{"performers/status"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}},
	}
}
