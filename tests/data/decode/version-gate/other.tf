language {
  compatible_with {
    opentofu = ">= 1.12, < 1.13" # ERROR: Incompatible module
  }
}
