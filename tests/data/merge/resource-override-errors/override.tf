resource "aws_instance" "web" {
  depends_on = [aws_instance.other] # ERROR: Unsupported override
  lifecycle {
    precondition { # ERROR: Can't override precondition blocks
      condition     = true
      error_message = "x"
    }
    postcondition { # ERROR: Can't override postcondition blocks
      condition     = true
      error_message = "x"
    }
  }
}

resource "aws_instance" "other" {
  depends_on = []
}

resource "aws_instance" "nope" { # ERROR: Missing resource to override
}

data "aws_ami" "nope" { # ERROR: Missing data resource to override
}

ephemeral "random_password" "nope" { # ERROR: Missing ephemeral resource to override
}

data "aws_ami" "x" {
  lifecycle {
    postcondition { # ERROR: Can't override postcondition blocks
      condition     = true
      error_message = "x"
    }
  }
}
