# A for expression's collection is evaluated outside the for's own scope: var.names below is a
# reference even though the iterator is also called "var", so this condition refers to its
# variable (Terraform 1.11.4 accepts it).
variable "names" {
  type = list(string)
  validation {
    condition     = alltrue([for var in var.names : length(var) > 0])
    error_message = "Names must not be empty."
  }
}

# A literal is no reference, even indexed: this condition refers to nothing (Terraform 1.11.4
# reports both errors).
variable "flag" {
  type = bool
  validation {
    condition     = true[0] # ERROR: Invalid validation expression # ERROR: Invalid variable validation condition
    error_message = "Never true."
  }
}
