"""The contract for scheme code: what a handler may import from the core (see docs/architecture.md)."""
