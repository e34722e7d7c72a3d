// The load generator library; see the loadtest issue.
