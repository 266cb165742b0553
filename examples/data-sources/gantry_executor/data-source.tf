data "gantry_executor" "avs" {
  name      = "executor"
  namespace = "avs"
}

output "executor_phase" {
  value = data.gantry_executor.avs.phase
}
