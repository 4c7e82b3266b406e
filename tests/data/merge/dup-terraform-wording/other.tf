terraform {
  backend "local" {} # ERROR: Duplicate 'backend' configuration block
  cloud {} # ERROR: Duplicate HCP Terraform configurations
}

ephemeral "random_password" "e" {} # ERROR: Duplicate ephemeral "random_password" configuration
