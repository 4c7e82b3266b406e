terraform {
  backend "s3" {
    bucket = "base"
  }
}
