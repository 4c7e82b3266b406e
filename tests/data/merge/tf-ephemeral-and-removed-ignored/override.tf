ephemeral "random_password" "p" {
  length = 16
}

ephemeral "random_password" "nope" {
}

removed {
  from = aws_instance.gone
}

moved { # ERROR: Cannot override 'moved' blocks
  from = a.b
  to   = a.c
}
