# A state-upgrade fixture (hack/state-upgrade.sh; DESIGN.md "Changing a resource's schema"): this
# configuration and the state Terraform 1.14 wrote for it at the schema version its directory
# names (terraform.tfstate, written once by `hack/state-upgrade.sh generate`). It runs in the
# namespace stateupgrade of the local cluster.
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

provider "gantry" {}

resource "gantry_performer" "fixture" {
  name      = "stateupgrade-performer"
  namespace = "stateupgrade"
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  labels    = { "app.kubernetes.io/part-of" = "state-upgrade" }
  env       = { LOG_LEVEL = "info" }
  args      = ["--port", "9090"]
  resources = { requests = { cpu = "100m", memory = "64Mi" }, limits = { memory = "128Mi" } }
  hardware_requirements = {
    gpu_count = 1
    gpu_type  = "NVIDIA-A100-SXM4-80GB"
  }
  tolerations = [{ key = "dedicated", operator = "Exists", effect = "NoSchedule" }]
  timeouts    = { create = "5m", delete = "5m" }
}
