locals {
  performers = {
    gpu_one  = gantry_performer.gpu_one
    gpu_h100 = gantry_performer.gpu_h100
    tee_tdx  = gantry_performer.tee_tdx
    tee_snp  = gantry_performer.tee_snp
    cpu      = gantry_performer.cpu
  }
}

output "grpc_endpoints" {
  description = "Each performer's gRPC endpoint (Service DNS name and port)."
  value       = { for k, p in local.performers : k => p.grpc_endpoint }
}

output "nodes" {
  description = "The node each performer's Pod runs on."
  value       = { for k, p in local.performers : k => p.node_name }
}
