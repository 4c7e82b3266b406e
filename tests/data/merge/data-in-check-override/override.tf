data "http" "h" {
  url = "https://override"
}
