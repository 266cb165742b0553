# A GPU/TEE stack: a GPU performer and a TEE performer, an Hourglass executor that uses both
# (operator keys from a Secret reference), an inference workspace (KAITO style) and the GPU
# driver package set on the GPU nodes. Instantiate it once per environment, e.g. with for_each.

locals {
  timeouts = { create = var.timeout, update = var.timeout }
}

resource "gantry_performer" "gpu" {
  name      = "${var.name}-gpu"
  namespace = var.namespace
  labels    = var.labels
  image     = var.performer_image
  hardware_requirements = {
    gpu_count = var.gpu.count
    gpu_type  = var.gpu.product
  }
  timeouts = local.timeouts
}

resource "gantry_performer" "tee" {
  name      = "${var.name}-tee"
  namespace = var.namespace
  labels    = var.labels
  image     = var.performer_image
  hardware_requirements = {
    tee_required = true
    tee_type     = var.tee_type
  }
  timeouts = local.timeouts
}

resource "gantry_executor" "this" {
  name                = var.name
  namespace           = var.namespace
  labels              = var.labels
  image               = var.executor_image
  aggregator_endpoint = var.aggregator_endpoint
  performer_names     = [gantry_performer.gpu.name, gantry_performer.tee.name]
  chains              = var.chains
  operator_keys       = var.operator_keys
  timeouts            = local.timeouts
}

resource "gantry_workspace" "chat" {
  name      = "${var.name}-chat"
  namespace = var.namespace
  labels    = var.labels
  resource = {
    count       = 1
    gpu_count   = var.model.gpu_count
    gpu_product = var.model.gpu_product
  }
  inference = {
    model = var.model.name
    image = var.model.image
  }
  timeouts = local.timeouts
}

resource "gantry_package_set" "drivers" {
  name                   = "${var.name}-drivers"
  node_selector          = var.driver.node_selector
  interruption_budget    = { count = 1 }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [
    {
      name    = "gpu-driver"
      version = var.driver.version
      image   = var.driver.image
      config  = { "driver.conf" = "version=${var.driver.version}" }
    },
  ]
  timeouts = { create = var.timeout, update = var.timeout, delete = var.timeout }

  # The plan's rollout preview (see the guide "Reviewing fleet changes in the plan"): a change
  # that would reboot more than max_rebooted_percent of the selected GPU nodes fails at plan.
  lifecycle {
    postcondition {
      condition     = try(self.rollout_preview.rebooted * 100 <= var.max_rebooted_percent * self.rollout_preview.selected_nodes, true) # null: no preview
      error_message = "The driver change reboots ${try(self.rollout_preview.rebooted, 0)} of ${try(self.rollout_preview.selected_nodes, 0)} GPU nodes; max_rebooted_percent allows ${var.max_rebooted_percent}%."
    }
  }
}
