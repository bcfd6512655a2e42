"""Tables read from records: payoffs (Eq. 1 and Eq. 2), two-player metrics, scores, turn outcomes, usage and
context, and each task's own tables (one module a task, named as the task)."""
