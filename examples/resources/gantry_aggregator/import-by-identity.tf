# Terraform 1.12 and later: import an existing Aggregator by its identity.
import {
  to = gantry_aggregator.avs
  identity = {
    namespace = "avs"
    name      = "avs"
  }
}
