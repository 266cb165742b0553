# A performer another team manages: its gRPC endpoint for this stack's executor.
data "gantry_performer" "hello" {
  name      = "hello"
  namespace = "avs"
}

output "hello_endpoint" {
  value = data.gantry_performer.hello.grpc_endpoint
}
