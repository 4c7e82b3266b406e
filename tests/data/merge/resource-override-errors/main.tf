resource "aws_instance" "web" {
  ami        = "ami-1"
  depends_on = [aws_instance.other]
}

resource "aws_instance" "other" {}

data "aws_ami" "x" {}
