terraform {
  required_version = ">= 1.5"
  required_providers {
    gantry = {
      source = "gantry-dev/gantry"
    }
  }
}
