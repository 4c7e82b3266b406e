# for_each on an ancestor call forbids provider configurations anywhere below it.
module "mid" {
  source   = "./modules/mid"
  for_each = toset(["a", "b"]) # ERROR: Module is incompatible with count, for_each, and depends_on
}
