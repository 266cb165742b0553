data "gantry_aggregator" "avs" {
  name      = "avs"
  namespace = "avs"
}

output "aggregator_phase" {
  value = data.gantry_aggregator.avs.phase
}
