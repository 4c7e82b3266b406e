module "c" {
  v     = 2
  extra = 3
}
