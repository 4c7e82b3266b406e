module "a" {
  source = "./a"
  providers = { # ERROR: Invalid provider local name
    aws = AWS.west
  }
  locals {} # ERROR: Reserved block type name in module block
  provider "x" {} # ERROR: Reserved block type name in module block
  _ {}
  _ {} # ERROR: Duplicate escaping block
}
