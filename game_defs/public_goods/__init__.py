"""The Public Goods Game (:mod:`.game`)."""
