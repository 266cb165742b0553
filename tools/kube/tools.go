//go:build tools

// Package kube pins the Kubernetes control-plane binaries (kube-apiserver,
// kube-controller-manager, kube-scheduler, kubectl) and the real node's kubelet, built by
// tools/install.sh for the local cluster. It is never imported by product code.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
