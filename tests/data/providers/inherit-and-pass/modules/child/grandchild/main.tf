resource "aws_vpc" "z" {}

data "google_client_config" "c" {}
