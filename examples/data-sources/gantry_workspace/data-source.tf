data "gantry_workspace" "falcon" {
  name      = "falcon-7b"
  namespace = "models"
}

output "inference_endpoint" {
  value = data.gantry_workspace.falcon.endpoint
}
