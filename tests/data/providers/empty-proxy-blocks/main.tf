module "child" {
  source = "./modules/child"
}
