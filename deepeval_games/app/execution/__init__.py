"""Playing a run's matches, a module a job: the entry point (:mod:`.run`), the stopping rules' runs (:mod:`.repeats`,
:mod:`.adaptive_rounds`), what a run did (:mod:`.run_result`), the choice of executor (:mod:`.placement`), the
driver's play-and-commit loop (:mod:`.play_and_commit`), the executors (:mod:`.process_executor` with its
:mod:`.fork_server`, :mod:`.ray_executor`), what their workers run (:mod:`.worker_side`), one match's play
(:mod:`.one_match`), and re-judging finished transcripts (:mod:`.rejudge`)."""
