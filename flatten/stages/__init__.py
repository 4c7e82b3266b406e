"""The pipeline's stages, each a pure function of its arguments.

files -> load -> decode (per-file checks) -> merge -> inputs -> graph -> layout -> emit.
"""
