moved { # ERROR: Cannot override 'moved' blocks
  from = terraform_data.a
  to   = terraform_data.b
}

import { # ERROR: Cannot override 'import' blocks
  to = terraform_data.a
  id = "x"
}

removed { # ERROR: Cannot override 'Removed' blocks
  from = terraform_data.c
}

check "c" { # ERROR: Can't override check blocks
  assert {
    condition     = true
    error_message = "x"
  }
}
