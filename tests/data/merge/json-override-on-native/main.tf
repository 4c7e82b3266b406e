resource "aws_instance" "web" {
  ami           = "ami-1"
  instance_type = "t2.micro"
  ebs_block_device {
    device_name = "sda"
  }
  tags = { Name = "base" }
}
