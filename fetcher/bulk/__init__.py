"""The `fetch_all` engine: many URLs at once, windows, lanes, outcomes."""
