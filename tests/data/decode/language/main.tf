language {
  edition     = "tofu2024" # ERROR: Invalid language edition
  experiments = [something] # ERROR: Unknown experiment keyword
}

language {
  edition = tofu2038 # ERROR: Unsupported language edition
  compatible_with {
    opentofu = ">= 1.11" # WARNING: Ineffective version constraint
    other    = "anything"
  }
}

language {
  edition = TF2021 # ERROR: Unsupported language edition
  compatible_with {
    opentofu = ">= 1.12"
  }
}

language {
  edition = tofu2024
}
