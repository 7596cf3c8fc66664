"""The reference Lua scripts: package data of bullmq-conformance (`conformance.bundled.lua`).

This file only makes the directory a package, so that the installed suite finds the scripts
through importlib.resources; the scripts are `<name>-<numkeys>.lua` and `includes/`.
"""
