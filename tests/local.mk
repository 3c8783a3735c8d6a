# tests/: multi-process system tests (Python drivers of real processes).
