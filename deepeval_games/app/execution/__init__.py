"""Playing a run's matches: the runner and its stopping rules, the executors (in process, worker processes, Ray),
the worker that plays one planned match, and re-judging finished transcripts."""
