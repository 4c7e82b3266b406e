action "aws_lambda_invoke" "notify" {
  config {
    function_name = "base"
    payload       = "p"
  }
}

resource "terraform_data" "r" {
  lifecycle {
    action_trigger {
      events  = [before_create]
      actions = [action.aws_lambda_invoke.notify]
    }
  }
}
