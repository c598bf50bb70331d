"""One module (or package) per protocol, each exporting `Handler` (see fetcher.registry)."""
