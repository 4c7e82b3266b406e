check "c" {
  data "http" "h" {
    url = "https://base"
  }
  assert {
    condition     = data.http.h.status_code == 200
    error_message = "x"
  }
}
