# How a workspace of a preset is sized on an instance type, worked out by the reconciler's own
# rules (no cluster needed). KAITO's multi-node example: deepseek-r1-0528 (12 GPUs) over six
# 2-GPU Standard_NC80adis_H100_v5 nodes, one replica (copy of the model) spanning all six.
output "deepseek" {
  value = provider::gantry::workspace_sizing("deepseek-r1-0528", "Standard_NC80adis_H100_v5", 6)
  # {
  #   preset = "deepseek-r1-0528", instance_type = "Standard_NC80adis_H100_v5", count = 6,
  #   gpu_product = "NVIDIA-H100-NVL", replicas = 1, nodes_per_replica = 6, gpus_per_node = 2,
  #   gpus_per_replica = 12, model_gpus = 12, multi_node = true, pods_per_node = 1,
  #   total_nodes = 6, total_gpus = 12, node_claims = 6,
  # }
}

# A node budget checked at plan, from the same numbers the workspace will use: four one-GPU
# pods share one 4-GPU g5.12xlarge node.
variable "pods" {
  type    = number
  default = 4
  validation {
    condition     = provider::gantry::workspace_sizing("falcon-7b-instruct", "g5.12xlarge", var.pods).total_nodes <= 2
    error_message = "More than two g5.12xlarge nodes: lower pods."
  }
}

locals {
  sizing = provider::gantry::workspace_sizing("falcon-7b-instruct", "g5.12xlarge", var.pods)
}

resource "gantry_workspace" "chat" {
  name = "chat"
  resource = {
    count         = local.sizing.count
    instance_type = local.sizing.instance_type
  }
  inference = {
    preset = local.sizing.preset
  }
}
