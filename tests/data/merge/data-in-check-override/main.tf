check "c" {
  data "http" "h" {
    url = "https://base"
  }
  assert {
    condition     = true
    error_message = "x"
  }
}
