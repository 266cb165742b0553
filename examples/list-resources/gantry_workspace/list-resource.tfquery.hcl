# terraform query (Terraform 1.14 and later): every Workspace labelled team=ml in namespace avs.
# `terraform query -generate-config-out=generated.tf` writes a resource and an import block
# for each, so objects created with kubectl can be adopted with a plan of no changes.
list "gantry_workspace" "ml" {
  provider         = gantry
  include_resource = true
  config {
    namespace      = "avs"
    label_selector = "team=ml"
  }
}
