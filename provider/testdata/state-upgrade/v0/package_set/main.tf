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

# PackageSets are cluster-scoped: this one selects no node (no node carries the label), so it
# is complete at once and touches no node of the shared cluster.
resource "gantry_package_set" "fixture" {
  name                   = "stateupgrade-package-set"
  node_selector          = { "gantry.dev/state-upgrade" = "no-such-node" }
  priority               = 50
  interruption_budget    = { count = 1 }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout                = { soak_duration = "1m", on_health_failure = "rollback" }

  packages = [
    {
      name      = "gpu-driver"
      version   = "550.54.15"
      image     = "ghcr.io/gantry-dev/gpu-driver:550"
      interrupt = { type = "reboot" }
      config    = { "driver.conf" = "version=550.54.15" }
    },
    {
      name       = "dcgm-tool"
      version    = "1.0.0"
      image      = "ghcr.io/gantry-dev/dcgm-tool:1"
      depends_on = { "gpu-driver" = "550.54.15" }
    },
  ]

  timeouts = { create = "5m", update = "5m", delete = "5m" }
}
