provider "terraform" {}

resource "terraform_data" "r" {
  input = "own"
}
