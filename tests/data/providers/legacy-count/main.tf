# The seed's legacy module: its own provider block, so count on the call is an error.
module "legacy" {
  source = "./modules/legacy"
  count  = 2 # ERROR: Module is incompatible with count, for_each, and depends_on
}
