"""The registry subgraph's roots: evidence (runs, definitions, groups, ...), public and read-heavy;
partners' reproductions and notes; runPublished and comparisonGroupChanged."""
