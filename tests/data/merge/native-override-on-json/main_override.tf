resource "aws_instance" "web" {
  root_block_device {
    volume_size = 20
  }
}
