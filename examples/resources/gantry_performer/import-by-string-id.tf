# Terraform 1.5 and later: import an existing Performer by its ID, "<namespace>/<name>".
import {
  to = gantry_performer.example
  id = "avs/example"
}
