# terraform apply -invoke=action.gantry_performer_restart.hello   (Terraform 1.14 and later)
action "gantry_performer_restart" "hello" {
  config {
    name      = "hello"
    namespace = "avs"
    timeout   = "5m"
  }
}

# Or restart it whenever its executor changes:
resource "gantry_executor" "avs" {
  # ...
  lifecycle {
    action_trigger {
      events  = [after_update]
      actions = [action.gantry_performer_restart.hello]
    }
  }
}
