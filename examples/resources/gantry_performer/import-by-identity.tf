# Terraform 1.12 and later: import an existing Performer by its identity.
import {
  to = gantry_performer.hello
  identity = {
    namespace = "avs"
    name      = "hello"
  }
}
