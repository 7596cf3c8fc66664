"""bullmq-conformance: drive a BullMQ port against the protocol vectors and compare Redis state.

Importing this package imports nothing else, so that the pytest plugin costs nothing in a
pytest run that does not use it. The command line is `conformance.cli`; the pytest plugin is
`conformance.plugin`; the package data (vectors, reference Lua, schemas) is found through
`conformance.core.resources`.
"""
