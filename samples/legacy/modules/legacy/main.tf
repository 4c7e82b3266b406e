provider "aws" {
  region  = "us-east-1"
  version = "~> 2.70"
}

variable "environment" {
  type = string
}

variable "retention_seconds" {
  type    = number
  default = 345600
}

resource "aws_sqs_queue" "jobs" {
  name                      = "jobs-${var.environment}"
  message_retention_seconds = var.retention_seconds

  lifecycle {
    prevent_destroy = true
  }
}

output "queue_url" {
  value = aws_sqs_queue.jobs.id
}
