resource "aws_instance" "web" {
  ami           = "ami-1"
  instance_type = "t2.micro"
}
