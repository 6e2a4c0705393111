"""Adapter for BVLC Caffe models."""
