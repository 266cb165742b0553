# A performer.
resource "gantry_performer" "p" {
  name  = "p"
  image = "example/performer:1.0.0"
}
