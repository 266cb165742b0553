# Terraform 1.5 and later: import an existing Executor by its ID, "<namespace>/<name>".
import {
  to = gantry_executor.example
  id = "avs/example"
}
