variable "a" {
  default  = null
  deprecated = "use c"
}
