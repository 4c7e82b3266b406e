import {
  provider = local # ERROR: Invalid import provider argument
  id       = "foo"
  to       = module.m.local_file.foo
}

import { # ERROR: Missing required import argument
  to = local_file.bar
}

import {
  provider = local
  id       = "x"
  to       = local_file.baz
}
