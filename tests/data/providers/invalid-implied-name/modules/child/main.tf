resource "aws-_foo" "x" {} # ERROR: Invalid provider local name
