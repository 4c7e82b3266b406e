terraform {
  backend "s3" {} # ERROR: Conflicting 'cloud' and 'backend' configuration blocks are present
  cloud {}
}

ephemeral "random_password" "e" {}
