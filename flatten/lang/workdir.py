"""What Terraform writes into the directory it runs in: the entries of a working directory that are
Terraform's, not the configuration's.

A flattened output is a root module that users run Terraform in (``terraform -chdir=OUT init``),
so its root module directory is also Terraform's working directory. A rebuild keeps these entries
(flatten/stages/output.py moves them into the new tree) and ``--check`` does not count them
(flatten/stages/stale.py). docs/ci.md, "What Terraform keeps in OUT", lists them for users.

Each name is Terraform's default (OpenTofu keeps the same ones):

- ``.terraform``: the data directory (``DefaultDataDir``, internal/command/meta.go; installed
  modules, providers, the backend's settings, the selected workspace).
- ``.terraform.lock.hcl``: the dependency lock file (``LockFilePath``,
  internal/depsfile/paths.go). Kept only where the build writes none: a lock file in the source
  root is copied into the output and wins.
- ``terraform.tfstate``, ``terraform.tfstate.backup``, ``terraform.tfstate.d``: the local
  backend's state, its backup and the other workspaces' states (``DefaultStateFilename``,
  ``DefaultBackupExtension``, ``DefaultWorkspaceDir``, internal/backend/local/backend.go).
- ``.terraform.tfstate.lock.info``: the local state's lock (``lockInfoPath``,
  internal/states/statemgr/filesystem.go: ``.<state file name>.lock.info`` beside it).
- ``errored.tfstate``: the state an apply could not persist to its backend
  (``backupStateForError``, internal/backend/local/backend_apply.go).
- ``crash.log``: the panic log of Terraform before 1.0 (main.go's panicwrap handler).

Saved plans (``terraform plan -out=FILE``) have any name; Terraform tells one by its content: a
zip archive holding a ``tfplan`` member (internal/plans/planfile/reader.go, "Sniff to make sure
this looks like a plan file"). ``PLAN_MEMBER`` is that name; the output stage looks inside.
"""

from __future__ import annotations

__all__ = ["LOCK_FILE", "PLAN_MEMBER", "TERRAFORM_ENTRIES", "ZIP_MAGIC"]

LOCK_FILE = ".terraform.lock.hcl"

TERRAFORM_ENTRIES = frozenset(
    {
        ".terraform",
        LOCK_FILE,
        "terraform.tfstate",
        "terraform.tfstate.backup",
        "terraform.tfstate.d",
        ".terraform.tfstate.lock.info",
        "errored.tfstate",
        "crash.log",
    }
)

PLAN_MEMBER = "tfplan"
ZIP_MAGIC = b"PK\x03\x04"  # a zip archive's first local file header (Go's archive/zip writes one first)
