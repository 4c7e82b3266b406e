locals {
  user = "me"
}

resource "null_resource" "a" {
  connection {
    host = self.public_ip
    user = local.user # ERROR: Invalid reference from destroy provisioner
  }
  connection { # ERROR: Duplicate connection block
  }

  provisioner "remote-exec" {
    when       = destroy
    on_failure = continue
    index      = count.index
    key        = each.key
    dir        = path.module
    bad        = "${var.x}-${self.id}" # ERROR: Invalid reference from destroy provisioner
    worse      = each.value # ERROR: Invalid reference from destroy provisioner
    lifecycle {} # ERROR: Reserved block type name in provisioner block
  }

  provisioner "local-exec" {
    when       = later # ERROR: Invalid "when" keyword
    on_failure = shrug # ERROR: Invalid "on_failure" keyword
    command    = local.user
    connection {}
    connection {} # ERROR: Duplicate connection block
    _ {}
    _ {} # ERROR: Duplicate escaping block
  }

  provisioner "chef" { # ERROR: The "chef" provisioner has been removed
  }
}

resource "null_resource" "b" {
  connection {
    user = local.user
  }
  provisioner "local-exec" {
    command = local.user
  }
}
