action "aws_lambda_invoke" "notify" {
  config {
    function_name = "override"
  }
}

action "aws_lambda_invoke" "nope" { # ERROR: Missing resource to override
  config {}
}

resource "terraform_data" "r" {
  lifecycle {
    action_trigger {
      events  = [after_create]
      actions = [action.aws_lambda_invoke.notify]
    }
  }
}
