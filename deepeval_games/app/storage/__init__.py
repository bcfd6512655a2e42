"""Durable results of a run directory: :class:`~.store.Store` composes the run lock (:mod:`.run_lock`), the SQLite
index (:mod:`.index`), the ``matches.jsonl`` journal with its group commit (:mod:`.journal`), the repair after a crash
(:mod:`.repair`) and the check of every record read back (:mod:`.admission`)."""
