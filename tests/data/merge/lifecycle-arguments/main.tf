resource "aws_instance" "web" {
  ami = "ami-1"
  lifecycle {
    create_before_destroy = true
    prevent_destroy       = true
    ignore_changes        = [tags]
    replace_triggered_by  = [terraform_data.x]
  }
}

resource "aws_instance" "bare" {
  ami = "ami-1"
}

resource "terraform_data" "x" {}
