# Terraform 1.12 and later: import an existing Workspace by its identity.
import {
  to = gantry_workspace.falcon
  identity = {
    namespace = "models"
    name      = "falcon-7b"
  }
}
