//go:build tools

// Package etcd pins the etcd server built by tools/install.sh for the local
// cluster. It is never imported by product code.
package etcd

import _ "go.etcd.io/etcd/server/v3"
