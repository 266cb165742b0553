# Pick the GPU product for a model from what the cluster has, and fail at plan when no node
# has four free H100s instead of waiting for a pod that can never be scheduled.
data "gantry_nodes" "h100" {
  gpu_product   = "NVIDIA-H100-80GB-HBM3"
  min_free_gpus = 4
  ready_only    = true
  min_nodes     = 1
}

output "h100_nodes" {
  value = { for n in data.gantry_nodes.h100.nodes : n.name => n.gpu_free }
}
