"""The edge of the process: every cache, prefetch, replay, fork, stdio and gc trick lives here."""
