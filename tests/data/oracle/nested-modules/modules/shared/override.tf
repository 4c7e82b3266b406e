locals {
  tag = "overridden:${var.label}"
}
