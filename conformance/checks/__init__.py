"""Checks of the suite itself and tools beside a run: the mutation self-test (`mutants`,
`mutant_catalog`), exactly-once claims under concurrency (`concurrency`), two candidates side
by side (`diff`), and the benchmark (`bench`)."""
