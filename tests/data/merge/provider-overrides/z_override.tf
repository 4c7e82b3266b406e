provider "google" {
  region = "later"
}
