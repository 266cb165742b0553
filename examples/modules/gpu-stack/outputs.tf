output "performer_endpoints" {
  description = "gRPC endpoint (host:port) of each performer: gpu and tee."
  value       = { gpu = gantry_performer.gpu.grpc_endpoint, tee = gantry_performer.tee.grpc_endpoint }
}

output "performer_nodes" {
  description = "Node each performer runs on: gpu and tee."
  value       = { gpu = gantry_performer.gpu.node_name, tee = gantry_performer.tee.node_name }
}

output "executor" {
  description = "The executor: its phase, live revision and the performer endpoints it was configured with."
  value = {
    phase               = gantry_executor.this.phase
    revision            = gantry_executor.this.current_revision
    performer_endpoints = gantry_executor.this.performer_endpoints
  }
}

output "workspace_endpoint" {
  description = "Inference endpoint of the workspace (its Service, host:port)."
  value       = gantry_workspace.chat.endpoint
}

output "workspace_nodes" {
  description = "Nodes the workspace's replicas run on."
  value       = gantry_workspace.chat.worker_nodes
}

output "drivers" {
  description = "The driver package set's status (complete once installed) and complete nodes over selected nodes."
  value       = { status = gantry_package_set.drivers.status, complete_nodes = gantry_package_set.drivers.complete_nodes }
}

output "summaries" {
  description = "The success summary each resource reached: performers and executor Running, workspace Ready, driver package set complete."
  value = {
    performer_gpu = gantry_performer.gpu.phase
    performer_tee = gantry_performer.tee.phase
    executor      = gantry_executor.this.phase
    workspace     = gantry_workspace.chat.state
    drivers       = gantry_package_set.drivers.status
  }
}
