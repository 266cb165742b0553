output "performer_endpoints" {
  description = "Per environment, each performer's gRPC endpoint."
  value       = { for env, m in module.gpu_stack : env => m.performer_endpoints }
}

output "performer_nodes" {
  description = "Per environment, the node each performer runs on."
  value       = { for env, m in module.gpu_stack : env => m.performer_nodes }
}

output "workspace_endpoints" {
  description = "Per environment, the inference workspace's endpoint."
  value       = { for env, m in module.gpu_stack : env => m.workspace_endpoint }
}

output "executors" {
  description = "Per environment, the executor's phase and live revision."
  value       = { for env, m in module.gpu_stack : env => { phase = m.executor.phase, revision = m.executor.revision } }
}

output "drivers" {
  description = "Per environment, the driver package set's status."
  value       = { for env, m in module.gpu_stack : env => m.drivers }
}
