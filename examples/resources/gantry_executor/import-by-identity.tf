# Terraform 1.12 and later: import an existing Executor by its identity.
import {
  to = gantry_executor.avs
  identity = {
    namespace = "avs"
    name      = "executor"
  }
}
