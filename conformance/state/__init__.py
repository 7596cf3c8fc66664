"""Redis state: reading a queue's keys back in one round trip (`snapshot`), finding them on a
shared server by key tracking instead of a keyspace scan (`keytracker`), and comparing them with
a vector's expected state (`compare`, with sequence diffs in n log n time in `align`)."""
