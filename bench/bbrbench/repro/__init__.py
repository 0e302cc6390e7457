"""The seed papers: running their experiments and the report that sets our numbers beside theirs."""
