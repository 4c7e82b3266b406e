resource "aws_instance" "web" {
  ami = "ami-1"
  root_block_device {
    a = 1
    b = 2
  }
  network_interface {
    index = 0
  }
  network_interface {
    index = 1
  }
}
