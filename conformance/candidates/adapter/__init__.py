"""`command:CMD`: an implementation in any language behind the JSON-lines adapter protocol
(docs/ADAPTERS.md), run as a child process (`command`)."""
