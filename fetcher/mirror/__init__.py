"""Mirroring (`fetch -r`): scope, frontier, timestamping, robots.txt, link extraction."""
