module "legacy" {
  source = "../legacy"
}
