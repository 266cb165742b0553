# terraform query (Terraform 1.14 and later): every Aggregator in namespace avs.
# `terraform query -generate-config-out=generated.tf` writes a resource and an import block
# for each, so Aggregators created with kubectl can be adopted with a plan of no changes.
list "gantry_aggregator" "avs" {
  provider         = gantry
  include_resource = true
  config {
    namespace = "avs"
  }
}
