"""Helpers for tests and notebooks (cntk.tests.test_utils)."""
