terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

variable "name" {
  type = string
}

resource "aws_s3_bucket" "this" {
  bucket = var.name
}

resource "aws_s3_bucket_policy" "this" {
  bucket = aws_s3_bucket.this.id
  policy = templatefile("${path.module}/policy.json.tftpl", { bucket = aws_s3_bucket.this.arn })
}

output "arn" {
  value = aws_s3_bucket.this.arn
}
