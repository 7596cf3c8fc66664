"""The bundled vector files: package data of bullmq-conformance (`conformance.bundled.vectors`).

This file only makes the directory a package, so that the installed suite finds the vectors
through importlib.resources; the vectors themselves are the YAML files and `schema.json`.
"""
