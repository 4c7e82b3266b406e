resource "aws_instance" "web" {
  connection {
    type = "winrm"
    host = "b"
  }
  provisioner "remote-exec" {
    inline = ["three"]
  }
}
