"""The ground floor of the suite, imported by every other folder and importing none of them:
the exception tree and exit codes (`errors`), outcomes, skips and tallies (`outcomes`), the
option table shared by the command line and the pytest plugin (`options`), package data and the
cache directory (`resources`), the JSON Schemas and their one error wording (`schemas`), signal
handling (`signals`), and queue identity with the run prefix (`queues`)."""
