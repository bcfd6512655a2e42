"""Durable results of a run directory: the SQLite store (WAL) and ``matches.jsonl``."""
