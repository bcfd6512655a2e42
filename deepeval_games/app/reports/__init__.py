"""Reading a run back: the report's tables and figures, the HTML report and its live view, the leaderboard,
and what a run costs (before: the dry-run estimate; after: the run summary)."""
