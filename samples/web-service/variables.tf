variable "project" {
  type        = string
  description = "Project name, used in resource names and tags."
  default     = "shop"
}

variable "environment" {
  type    = string
  default = "staging"

  validation {
    condition     = contains(["staging", "production"], var.environment)
    error_message = "The environment must be staging or production."
  }
}

variable "region" {
  type    = string
  default = "eu-west-1"
}

variable "instance_type" {
  type    = string
  default = "t3.micro"
}

variable "instance_count" {
  type    = number
  default = 2
}

variable "ingress_ports" {
  type    = list(number)
  default = [80, 443]
}
