"""One run of the vectors: what was asked (`spec`), the run itself with its Redis, candidate
and queue names (`session`), the verdict steps both drivers share (`verdict`: seed, skip, judge,
hold), and the two drivers: one vector at a time (`serial`) and the vectors of a scripts
candidate pipelined in batches (`batch`)."""
