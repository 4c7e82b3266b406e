resource "aws_instance" "web" {
  lifecycle {
    create_before_destroy = false
    ignore_changes        = [ami]
    replace_triggered_by  = [terraform_data.y]
    enabled               = false
  }
}

resource "aws_instance" "bare" {
  lifecycle {
    prevent_destroy = true
    replace_triggered_by = [terraform_data.x]
  }
}
