"""Analysis of match records: the paper's Eq. 1 and Eq. 2, confidence intervals and tables.

Reads match records only (from a run directory's store or ``matches.jsonl``), never plays.
"""

from analysis.stats.confseq import mean_interval
from analysis.tables.payoffs import format_scores
from analysis.tables.scores import Score, role_scores, symmetric_scores

__all__ = ["Score", "format_scores", "mean_interval", "role_scores", "symmetric_scores"]
