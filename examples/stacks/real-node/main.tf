# The real node of the local cluster (make demo, when the machine can run it): one performer and
# one package set whose Pods really run on gantry-real, a kubelet with containerd, with the test
# images make demo imports there (there is no registry). The package's apply stage writes a file
# on the host, under host_dir (make demo: .cache/demo-realnode of the clone); the performer's
# server answers on its gRPC port.
terraform {
  required_providers {
    gantry = {
      source = "gantry-dev/gantry"
    }
  }
}

provider "gantry" {}

variable "host_dir" {
  type        = string
  description = "Absolute host directory the package writes its files to (created by its apply stage)."
  validation {
    condition     = startswith(var.host_dir, "/") && var.host_dir != "/"
    error_message = "host_dir must be an absolute path other than /."
  }
}

locals {
  # Only what tolerates the real node's taint lands there.
  real_node = { "gantry.dev/node-pool" = "real" }
  toleration = { key = "gantry.dev/real-node", operator = "Exists", effect = "NoSchedule" }
}

resource "gantry_performer" "hello" {
  name              = "hello-real"
  namespace         = "default"
  image             = "ghcr.io/gantry-dev/test-performer:1.0.0"
  image_pull_policy = "IfNotPresent"
  node_selector     = local.real_node
  tolerations       = [local.toleration]
}

resource "gantry_package_set" "hello" {
  name                   = "hello-real"
  node_selector          = local.real_node
  additional_tolerations = [local.toleration]
  packages = [{
    name    = "hello"
    version = "1.0.0"
    image   = "ghcr.io/gantry-dev/test-package:1.0.0"
    # The host's / at /host in the stage containers; the scripts write under it.
    host              = { root_mount_path = "/host" }
    env               = { GANTRY_MARKER_DIR = "/host${var.host_dir}" }
    config            = { greeting = "hello from a real package stage" }
    uninstall_enabled = true
  }]
}

output "performer_endpoint" {
  value = gantry_performer.hello.grpc_endpoint
}

output "performer_node" {
  value = gantry_performer.hello.node_name
}

output "package_status" {
  value = "${gantry_package_set.hello.status} (${gantry_package_set.hello.complete_nodes} nodes)"
}

output "host_files" {
  description = "What the package wrote on the host."
  value       = ["${var.host_dir}/hello.installed", "${var.host_dir}/hello.config"]
}
