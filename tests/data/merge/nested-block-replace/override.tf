resource "aws_instance" "web" {
  root_block_device {
    a = 3
  }
}
