package provider

import "regexp"

// Name and value patterns checked at plan time (the API server and the reconciler would reject
// the same values at apply time).
var (
	dns1035Label = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	avsAddress   = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	labelValue   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)
)

// Value patterns checked at plan time (the CRD enforces the same).
var (
	ethAddress  = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	rpcURL      = regexp.MustCompile(`^(https?|wss?)://[^\s/?#]+([/?#]\S*)?$`)
	httpURL     = regexp.MustCompile(`^https?://[^\s/?#]+([/?#]\S*)?$`)
	grpcTarget  = regexp.MustCompile(`^([a-z][a-z0-9+.-]*://(/)?)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?:[0-9]{1,5}(/.*)?$`)
	secretKey   = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	dns1123Name = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// Version and package set name patterns (gantry_package_set's, also read by the rollout,
// edge and package_image code).
var (
	semverRe  = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	setNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)
