"""Package data, read through `conformance.resources`; nothing here is imported as code.

`vectors` and `lua` are the repository's top-level `vectors/` and `lua/` directories, mapped
here by the build (see pyproject.toml); `schemas/`, `examples/` and `node-bullmq/` live here.
"""
