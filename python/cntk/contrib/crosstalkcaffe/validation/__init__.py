"""Checking a converted model against its source toolkit."""
