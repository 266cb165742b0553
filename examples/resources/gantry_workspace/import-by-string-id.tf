# Terraform 1.5 and later: import an existing Workspace by its ID, "<namespace>/<name>".
import {
  to = gantry_workspace.example
  id = "avs/example"
}
