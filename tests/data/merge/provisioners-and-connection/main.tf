resource "aws_instance" "web" {
  ami = "ami-1"
  connection {
    type = "ssh"
    host = "a"
    user = "root"
  }
  provisioner "local-exec" {
    command = "one"
  }
  provisioner "local-exec" {
    command = "two"
  }
}
