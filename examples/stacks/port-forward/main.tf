# gantry_port_forward on the local cluster's real node (Terraform 1.10 and later; see README.md):
# a performer with the test performer image, a forward to it for the length of the run, and a
# smoke test that calls the performer through the forward once it is created.
terraform {
  required_version = ">= 1.10"
  required_providers {
    gantry = {
      source = "gantry-dev/gantry"
    }
  }
}

provider "gantry" {}

variable "namespace" {
  type        = string
  default     = "default"
  description = "Namespace of the performer."
}

resource "gantry_performer" "hello" {
  name              = "hello-forward"
  namespace         = var.namespace
  image             = "ghcr.io/gantry-dev/test-performer:1.0.0"
  image_pull_policy = "IfNotPresent"
  # Only what tolerates the real node's taint lands there.
  node_selector = { "gantry.dev/node-pool" = "real" }
  tolerations   = [{ key = "gantry.dev/real-node", operator = "Exists", effect = "NoSchedule" }]
}

ephemeral "gantry_port_forward" "hello" {
  performer = {
    name      = gantry_performer.hello.name
    namespace = gantry_performer.hello.namespace
  }
  # Known once the performer is applied: the run that creates it opens the forward during
  # apply, after the performer is Running; later runs open it during plan too.
  pod_name = gantry_performer.hello.pod_name
  # One GET through the forward before anything uses it: Open fails unless it answers 2xx.
  check_path = "/"
}

# The smoke test: once per performer (re)creation or image change, from the machine running
# Terraform, through the forward.
resource "terraform_data" "smoke_test" {
  triggers_replace = [gantry_performer.hello.id, gantry_performer.hello.image]
  provisioner "local-exec" {
    command = "curl -fsS ${ephemeral.gantry_port_forward.hello.url}/"
  }
}

output "performer_pod" {
  value = gantry_performer.hello.pod_name
}
