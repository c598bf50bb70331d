"""The disk layer: `.part` naming, atomic placing, writers, resume records, the run's own files."""
