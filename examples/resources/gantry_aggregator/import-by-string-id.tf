# Terraform 1.5 and later: import an existing Aggregator by its ID, "<namespace>/<name>".
import {
  to = gantry_aggregator.example
  id = "avs/example"
}
